import Foundation
import Glibc
import MockCloudHTTPTestSupport
import MockCloudTestSupport
import Testing

/// The FastCGI mode's loop for waits (`--waits N`): one process holds many
/// waits at once, one write answers them all, a wait past its address's
/// share is refused at once (429), and a client that closes its connection
/// frees its place at once.
@Suite(.serialized) struct WaitLoopTests {
    /// The sockets `pid` holds: the loop's listening socket, one per held
    /// connection (and any the test process left it).
    static func sockets(of pid: Int32) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:") == true
        }.count
    }

    /// Waits (a few seconds at most) until `pid` holds `count` sockets.
    static func holds(_ pid: Int32, _ count: Int) -> Bool {
        for _ in 0..<1000 {
            if sockets(of: pid) == count { return true }
            usleep(10_000)
        }
        return false
    }

    @Test func oneProcessHoldsManyWaitsAndOneWriteAnswersThemAll() throws {
        let pool = try FastCGIPoolTests(extra: ["--waits", "200", "--waits-per-address", "120"])
        defer { pool.stop() }
        let put = try pool.exchange(pool.params("PUT", headers: ["X-User-Key": "u1"], body: #"{"updatedAt":"20260518T044304.095000Z"}"#))
        let tag = String(try #require(put.text.split(separator: "\r\n").first { $0.hasPrefix("ETag: ") }?.dropFirst(6)))
        let loop = try #require(pool.workers().first, "no loop")
        #expect(pool.workers().count == 1)
        let idle = Self.sockets(of: loop)
        func wait(from address: String) throws -> Int32 {
            let fd = try pool.connect()
            FastCGITestClient.send(fd, FastCGITestClient.request(
                method: "GET", path: "/user/settings", query: "wait=30", headers: ["X-User-Key": "u1", "If-None-Match": tag],
                extra: ["MOCKCLOUD_DATA": pool.folder.file("data"), "REMOTE_ADDR": address]))
            return fd
        }
        // 120 from one address (its share) and 60 from another: 180 held by one process.
        var held: [Int32] = []
        for _ in 0..<120 { held.append(try wait(from: "127.0.0.1")) }
        for _ in 0..<60 { held.append(try wait(from: "127.0.0.2")) }
        #expect(Self.holds(loop, idle + 180), "the loop holds \(Self.sockets(of: loop)) sockets")
        // The 121st from the first address is refused at once.
        let refusedFD = try wait(from: "127.0.0.1")
        let refused = try #require(try FastCGITestClient.answers(try FastCGITestClient.receive(refusedFD, requests: 1)).byID[1])
        close(refusedFD)
        #expect(refused.status == 429)
        #expect(refused.text.contains("Retry-After: 5"))
        // Its sentence names the loop's share and setting, not the CGI mode's.
        #expect(refused.text.contains("120 already wait"), "\(refused.text)")
        #expect(refused.text.contains("(MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS)"), "\(refused.text)")
        // A client that leaves frees its place at once: the next is held.
        close(held.removeFirst())
        #expect(Self.holds(loop, idle + 179))
        held.append(try wait(from: "127.0.0.1"))
        #expect(Self.holds(loop, idle + 180))
        // One write answers every one of them with the new document.
        let write = try pool.exchange(pool.params("PUT", headers: ["X-User-Key": "u1"], body: #"{"updatedAt":"20260518T044305.095000Z","a":2}"#))
        #expect(write.status == 200)
        for fd in held {
            let answer = try FastCGITestClient.answers(try FastCGITestClient.receive(fd, requests: 1)).byID[1]
            #expect(answer?.status == 200)
            #expect(answer?.body.contains(#""a""#) == true)
            close(fd)
        }
        #expect(Self.holds(loop, idle))
        #expect(pool.workers() == [loop])
    }
}
