import Foundation
import Glibc
import MockCloudHTTPTestSupport
import MockCloudTestSupport
import Testing

/// A program started as a FastCGI pool (`--fastcgi unix:PATH`): a worker
/// that crashes or runs out of time in the middle of a request answers that
/// request in JSON over its connection, as the CGI program does, and the
/// master puts another worker in its place and says which signal ended the
/// last; SIGTERM lets a worker finish its request before the pool exits.
@Suite(.serialized) struct FastCGIPoolTests {
    let folder: TemporaryDirectory
    /// The pool's master.
    let master: pid_t
    var socket: String { folder.file("s.sock") }
    var log: String { folder.file("pool.log") }

    /// Starts the pool, its stderr to pool.log (posix_spawn: Foundation's
    /// Process would reap it behind the test's back).
    init() throws {
        try self.init(extra: [])
    }

    /// With more arguments (`--max-requests N`).
    init(extra: [String]) throws {
        folder = try TemporaryDirectory(prefix: "mockcloud-fcgi")
        try FileManager.default.createDirectory(atPath: folder.file("data"), withIntermediateDirectories: false)
        let program = ProgramRunner.binDirectory.appendingPathComponent("user-settings").path
        let arguments = [program, "--fastcgi", "unix:" + folder.file("s.sock"), "--workers", "1"] + extra
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var environment: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/bin:/bin"), nil]
        defer { for pointer in argv + environment { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 2, folder.file("pool.log"), O_WRONLY | O_CREAT | O_APPEND, 0o600)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, nil, &argv, &environment)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        master = pid
    }

    /// How the master ended, once it has.
    func waitForMaster() -> Int32 {
        var status: Int32 = 0
        while waitpid(master, &status, 0) == -1 && errno == EINTR {}
        return status
    }

    /// Stops the pool (SIGTERM to the master, by its PID) and waits for it;
    /// its workers follow it.
    func stop() {
        kill(master, SIGTERM)
        _ = waitForMaster()
    }

    /// A connection, once the pool listens (it may still be starting).
    func connect() throws -> Int32 {
        for _ in 0..<500 {
            if let fd = FastCGITestClient.connect(socket) { return fd }
            usleep(10_000)
        }
        throw POSIXError(.ECONNREFUSED)
    }

    func params(_ method: String, query: String = "", headers: [String: String] = [:], body: String = "") -> [UInt8] {
        FastCGITestClient.request(
            method: method, path: "/user/settings", query: query, headers: headers, body: Array(body.utf8),
            extra: ["MOCKCLOUD_DATA": folder.file("data")])
    }

    /// One request on a connection of its own; its answer.
    func exchange(_ bytes: [UInt8]) throws -> FastCGITestClient.Answer {
        let fd = try connect()
        defer { close(fd) }
        FastCGITestClient.send(fd, bytes)
        return try #require(try FastCGITestClient.answers(try FastCGITestClient.receive(fd, requests: 1)).byID[1])
    }

    /// The pool's workers: the master's children.
    func workers() -> [Int32] {
        let parent = master
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name -> Int32? in
            guard let pid = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.range(of: ") ", options: .backwards)
            else { return nil }
            let fields = stat[close.upperBound...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == parent ? pid : nil
        }
    }

    /// True once `pid` has an inotify instance open: it is waiting for a change.
    static func isWaiting(_ pid: Int32) -> Bool {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.contains("inotify") == true }
    }

    /// Sends a wait (`?wait=`), finds the worker holding it, sends it
    /// `signal`, and returns the wait's answer.
    func signalAWaitingWorker(_ signal: Int32, toMaster: Bool = false, seconds: Int = 30) throws -> FastCGITestClient.Answer {
        try signalAWaitingWorkerWithPID(signal, toMaster: toMaster, seconds: seconds).answer
    }

    func signalAWaitingWorkerWithPID(
        _ signal: Int32, toMaster: Bool = false, seconds: Int = 30
    ) throws -> (answer: FastCGITestClient.Answer, worker: Int32) {
        let put = try exchange(params("PUT", headers: ["X-User-Key": "u1"], body: #"{"updatedAt":"20260518T044304.095000Z"}"#))
        let tag = try #require(put.text.split(separator: "\r\n").first { $0.hasPrefix("ETag: ") }?.dropFirst(6))
        let fd = try connect()
        defer { close(fd) }
        FastCGITestClient.send(fd, params("GET", query: "wait=\(seconds)", headers: ["X-User-Key": "u1", "If-None-Match": String(tag)]))
        var waiting: Int32?
        for _ in 0..<1000 where waiting == nil {
            waiting = workers().first(where: Self.isWaiting)
            if waiting == nil { usleep(10_000) }
        }
        let worker = try #require(waiting, "no worker began the wait")
        kill(toMaster ? master : worker, signal)
        return (try #require(try FastCGITestClient.answers(try FastCGITestClient.receive(fd, requests: 1)).byID[1]), worker)
    }

    @Test func aWorkerThatCrashesMidRequestAnswersJSONAndIsReplaced() throws {
        defer { stop() }
        let answer = try signalAWaitingWorker(SIGSEGV)
        #expect(answer.status == 500)
        #expect(answer.body == #"{"error": "internal error; see the server log", "changed": "no"}"#)
        #expect(answer.log.contains("the program crashed (fatal signal)"))
        #expect(answer.end?.appStatus == 1)
        // Another worker serves the next request.
        let next = try exchange(params("GET", headers: ["X-User-Key": "u1"]))
        #expect(next.status == 200)
        #expect((try? String(contentsOfFile: log, encoding: .utf8))?.contains("ended by signal \(SIGSEGV)") == true)

    }

    @Test func aWorkerOutOfTimeAnswersJSONAndIsReplaced() throws {
        defer { stop() }
        // (SIGALRM is among the signals the test runner blocks, which the pool unblocks.)
        let answer = try signalAWaitingWorker(SIGALRM)
        #expect(answer.status == 503)
        #expect(answer.body == #"{"error": "request took too long (storage busy); nothing was written, try again", "changed": "no"}"#)
        #expect(try exchange(params("GET", headers: ["X-User-Key": "u1"])).status == 200)
    }

    @Test func sigtermLetsTheWorkerFinishItsRequestThenThePoolExits() throws {
        let (answer, worker) = try signalAWaitingWorkerWithPID(SIGTERM, toMaster: true, seconds: 1)
        // The wait ran its course: nothing changed in its second.
        #expect(answer.status == 304)
        let status = waitForMaster()
        #expect(status == 0, "the master's wait status")
        #expect(!FileManager.default.fileExists(atPath: socket))
        // The worker was the master's child: reaped by it, so gone, not a zombie.
        #expect(kill(worker, 0) == -1 && errno == ESRCH)
    }

    /// The next worker that is not one of `seen`, within 5 s.
    func newWorker(besides seen: [Int32]) throws -> Int32 {
        for _ in 0..<500 {
            if let worker = workers().first(where: { !seen.contains($0) }) { return worker }
            usleep(10_000)
        }
        throw POSIXError(.ESRCH)
    }

    @Test func aWorkerThatKeepsFailingAtItsStartIsStartedAgainLaterEachTimeAndAStopStillComesAtOnce() throws {
        // A worker that crashes (SIGSEGV, no request to answer) within a
        // second of its start, in a row: 0.1 s, then 0.2 s, 0.4 s, ...
        var stopped = false
        defer { if !stopped { stop() } }
        var seen: [Int32] = []
        for _ in 0..<3 {
            let worker = try newWorker(besides: seen)
            seen.append(worker)
            kill(worker, SIGSEGV)
        }
        // After the third the pool is whole again, and serves.
        seen.append(try newWorker(besides: seen))
        #expect(try exchange(params("GET", headers: ["X-User-Key": "u1"])).status == 404)
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        for (count, delay) in [(1, "0.1"), (2, "0.2"), (3, "0.4")] {
            #expect(lines.contains { $0.contains("within a second of its start, \(count) in a row; starting another in \(delay) s") },
                    "\(lines)")
        }
        // A worker that lived a second ends the run of failures: the next
        // starts at once.
        let served = try #require(seen.last)
        usleep(1_100_000)
        kill(served, SIGSEGV)
        // Six more in a row make the next wait 3.2 s; a stop during it comes at once.
        for _ in 0..<6 {
            let worker = try newWorker(besides: seen)
            seen.append(worker)
            kill(worker, SIGSEGV)
        }
        usleep(500_000)
        let after = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(after.contains { $0.contains("worker \(served) ended by signal \(SIGSEGV)") && $0.hasSuffix("; starting another") },
                "\(after)")
        #expect(after.contains { $0.contains("6 in a row; starting another in 3.2 s") }, "\(after)")
        // It sleeps through its waits: a master that spun would use them.
        let stat = try String(contentsOfFile: "/proc/\(master)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ") ", options: .backwards)!.upperBound...].split(separator: " ")
        let ticks = (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)    // utime + stime
        #expect(ticks < 50, "the master used \(ticks) clock ticks of CPU over 5 s of waits")
        let asked = Date()
        kill(master, SIGTERM)
        #expect(waitForMaster() == 0, "the master's wait status")
        stopped = true
        #expect(Date().timeIntervalSince(asked) < 2, "the stop waited out the 3.2 s")
    }

    @Test func maxRequestsOneServesEachRequestInAWorkerOfItsOwn() throws {
        stop()    // this instance's own pool: the test needs one that recycles
        let pool = try FastCGIPoolTests(extra: ["--max-requests", "1"])
        defer { pool.stop() }
        var served: [Int32] = []
        for round in 0..<3 {
            var worker: Int32?
            for _ in 0..<500 where worker == nil {
                worker = pool.workers().first { !served.contains($0) }
                if worker == nil { usleep(10_000) }
            }
            served.append(try #require(worker, "round \(round): no new worker"))
            #expect(try pool.exchange(pool.params("GET", headers: ["X-User-Key": "u\(round)"])).status == 404)
            // The worker that served it ends; the master starts the next.
            var tries = 0
            while pool.workers().contains(served[round]) && tries < 500 {
                usleep(10_000)
                tries += 1
            }
            #expect(!pool.workers().contains(served[round]))
        }
        #expect(Set(served).count == 3)
        // A recycled worker is no failure: nothing of it in the log.
        let log = (try? String(contentsOfFile: pool.log, encoding: .utf8)) ?? ""
        #expect(!log.contains("exited") && !log.contains("ended by"), "\(log)")
    }
}
