import Dispatch
import Foundation
import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Synchronization
import Testing

/// `?wait=` through the routes (docs/API.md §3, §4): what is answered at
/// once, what waits and for what, and the answer when the box is full.
@Suite(.serialized) struct WaitRouteTests {
    let data: TemporaryDirectory
    /// The seconds each wait asked the process's time limit for.
    final class Allowed: Sendable {
        let seconds = Mutex<[Int]>([])
        func withLock<T>(_ body: (inout [Int]) -> T) -> T { seconds.withLock { body(&$0) } }
    }
    let allowed = Allowed()
    var host: WaitHost {
        let allowed = self.allowed
        return WaitHost(allow: { seconds in allowed.withLock { $0.append(seconds) } }, answerPaths: { [] }, perAddress: 4)
    }

    init() throws {
        data = try TemporaryDirectory()
    }

    var settings: SettingsRoute { SettingsRoute(dataRoot: data.path, minimumFreeBytes: 0, waiting: host) }
    var inbox: InboxRoute {
        var config = InboxSettings()
        config.minimumFreeBytes = 0
        return InboxRoute(dataRoot: data.path, settings: config, waiting: host)
    }

    func get(_ query: String, headers: [String: String] = [:]) -> CGIResponse {
        let request = CGIRequest(method: "GET", path: "/user/settings", query: query,
                                 headers: headers.merging(["X-User-Key": "u1"]) { $1 }, body: [])
        return answer { try settings.respond(to: request) }
    }

    func put(_ body: String) -> CGIResponse {
        let request = CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u1"], body: Array(body.utf8))
        return answer { try settings.respond(to: request) }
    }

    func feed(_ query: String, from address: String = "127.0.0.1") -> CGIResponse {
        answer {
            try inbox.respond(to: CGIRequest(method: "GET", path: "/inbox", query: query, headers: ["X-User-Key": "u1"],
                                             environment: ["REMOTE_ADDR": address]))
        }
    }

    /// Holds `count` of the box's places as other processes would, the
    /// first `count` named for `address`; closed at the end of `body`.
    func holding(_ count: Int, for address: String, _ body: () throws -> Void) throws {
        try data.write("", to: ".locks/keep")
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for n in 0..<count {
            let fd = open(data.file(".locks/waiting.\(n).lock"), O_RDWR | O_CREAT, 0o600)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
            #expect(pwrite(fd, address, address.utf8.count, 0) == address.utf8.count)
            held.append(fd)
        }
        try body()
    }

    func write(_ id: String, device: String) -> CGIResponse {
        answer {
            try inbox.respond(to: CGIRequest(method: "PUT", path: "/inbox/" + id,
                                             headers: ["X-User-Key": "u1", "X-Device-Id": device], body: Array("{}".utf8)))
        }
    }

    struct PageError: Error {}

    /// Runs `change` on another thread after `delay` seconds.
    func later(_ delay: Double, _ change: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: change)
    }

    /// `body` and the seconds it took.
    func timed(_ body: () -> CGIResponse) -> (CGIResponse, Double) {
        let started = Sys.monotonicNanos()
        let response = body()
        return (response, Double(Sys.monotonicNanos() - started) / 1e9)
    }

    @Test func settingsWithoutIfNoneMatchAnswerAtOnce() {
        _ = put(#"{"a": 1}"#)
        let (response, seconds) = timed { get("wait=30") }
        #expect(response.status == 200)
        #expect(seconds < 5)
        #expect(allowed.withLock { $0 } == [])
    }

    @Test func settingsWhoseTagNoLongerMatchesAnswerAtOnce() {
        _ = put(#"{"a": 1}"#)
        let (response, seconds) = timed { get("wait=30", headers: ["If-None-Match": #""0000000000000000""#]) }
        #expect(response.status == 200)
        #expect(seconds < 5)
    }

    @Test func aMatchingTagIs304WhenTheWaitRunsOut() throws {
        let etag = try #require(put(#"{"a": 1}"#).header("ETag"))
        let (response, seconds) = timed { get("wait=1", headers: ["If-None-Match": etag]) }
        #expect(response.status == 304)
        #expect(response.header("ETag") == etag)
        #expect(seconds >= 1)
        #expect(allowed.withLock { $0 } == [1])
    }

    @Test func anotherWriteEndsTheWaitWithTheNewDocument() throws {
        let etag = try #require(put(#"{"a": 1}"#).header("ETag"))
        let route = settings
        later(0.2) {
            _ = try? route.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u1"],
                                                  body: Array(#"{"a": 2}"#.utf8)))
        }
        let (response, seconds) = timed { get("wait=30", headers: ["If-None-Match": etag]) }
        #expect(response.status == 200)
        #expect(response.header("ETag") != etag)
        #expect(String(decoding: response.body, as: UTF8.self).hasPrefix(#"{"a": 2, "serverReceivedAt""#))
        #expect(seconds < 10)
    }

    @Test func aDeletionEndsTheWaitWith404() throws {
        let etag = try #require(put(#"{"a": 1}"#).header("ETag"))
        let route = settings
        later(0.2) {
            _ = try? route.respond(to: CGIRequest(method: "DELETE", path: "/user/settings", headers: ["X-User-Key": "u1"]))
        }
        #expect(get("wait=30", headers: ["If-None-Match": etag]).status == 404)
    }

    /// `*` and `""` (what the client sends holding nothing) wait for a document.
    @Test(arguments: ["*", #""""#])
    func aDocumentWhereThereWasNoneEndsTheWaitWith200(ifNoneMatch: String) {
        let route = settings
        later(0.2) {
            _ = try? route.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u1"],
                                                  body: Array(#"{"new": true}"#.utf8)))
        }
        let response = get("wait=30", headers: ["If-None-Match": ifNoneMatch])
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""new": true"#))
    }

    /// A client that holds a document deleted before its wait began (the
    /// deletion came between its reads) hears of the deletion at once.
    @Test func aDocumentsTagWithNothingStoredIs404AtOnce() throws {
        let etag = try #require(put(#"{"a": 1}"#).header("ETag"))
        _ = answer { try settings.respond(to: CGIRequest(method: "DELETE", path: "/user/settings", headers: ["X-User-Key": "u1"])) }
        #expect(get("wait=30", headers: ["If-None-Match": etag]).status == 404)
        #expect(allowed.withLock { $0 } == [])
    }

    @Test func nothingStoredIs404WhenTheWaitRunsOut() {
        #expect(get("wait=1", headers: ["If-None-Match": "*"]).status == 404)
    }

    @Test func theFeedWaitsForAnotherDevicesWriteAndAsksForItsTime() throws {
        _ = write("a", device: "mirror")
        let anchor = try #require(try JSONParser.parse(feed("").body).objectValue?["anchor"]?.stringValue)
        let route = inbox
        later(0.2) {
            _ = try? route.respond(to: CGIRequest(method: "PUT", path: "/inbox/own", headers: ["X-User-Key": "u1", "X-Device-Id": "phone"],
                                                  body: Array("{}".utf8)))
        }
        later(0.6) {
            _ = try? route.respond(to: CGIRequest(method: "PUT", path: "/inbox/b", headers: ["X-User-Key": "u1", "X-Device-Id": "mirror"],
                                                  body: Array("{}".utf8)))
        }
        let (response, seconds) = timed { feed("anchor=\(anchor)&exclude-source=phone&wait=30") }
        #expect(response.status == 200)
        let page = try #require(try JSONParser.parse(response.body).objectValue)
        guard case .array(let messages)? = page["messages"] else { throw PageError() }
        #expect(messages.compactMap { $0.objectValue?["id"]?.stringValue } == ["b"])
        #expect(seconds >= 0.5)
        #expect(allowed.withLock { $0 } == [30])
    }

    @Test func aFullBoxAnswers503WithRetryAfter() throws {
        _ = write("a", device: "mirror")
        let anchor = try #require(try JSONParser.parse(feed("").body).objectValue?["anchor"]?.stringValue)
        try data.write("", to: ".locks/keep")
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for n in 0..<Capacity.waitingAtOnce {
            let fd = open(data.file(".locks/waiting.\(n).lock"), O_RDWR | O_CREAT, 0o600)
            _ = flock(fd, LOCK_EX | LOCK_NB)
            held.append(fd)
        }
        let response = feed("anchor=\(anchor)&wait=30")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "5")
        #expect(String(decoding: response.body, as: UTF8.self)
            == #"{"error": "too many requests are waiting for changes (48 at once on this server); retry after 5 seconds"}"#)
    }

    @Test func anAddressPastItsShareAnswers429NamingTheShareAndTheSetting() throws {
        _ = write("a", device: "mirror")
        let anchor = try #require(try JSONParser.parse(feed("").body).objectValue?["anchor"]?.stringValue)
        try holding(4, for: "192.168.1.23") {
            let response = feed("anchor=\(anchor)&wait=30", from: "192.168.1.23")
            #expect(response.status == 429)
            #expect(response.header("Retry-After") == "5")
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"error": "too many waiting requests from this "#
                + #"address: 4 already wait for changes, its share of the server's 48 places (MOCKCLOUD_WAITS_PER_ADDRESS); "#
                + #"retry after 5 seconds, or end a wait it no longer needs"}"#)
            // Another address waits, and the settings route counts the same places.
            #expect(feed("anchor=\(anchor)&wait=1", from: "192.168.1.24").status == 200)
            let settings = answer {
                try self.settings.respond(to: CGIRequest(method: "GET", path: "/user/settings", query: "wait=30",
                                                         headers: ["X-User-Key": "u1", "If-None-Match": "*"],
                                                         environment: ["REMOTE_ADDR": "192.168.1.23"]))
            }
            #expect(settings.status == 429)
        }
        // A share of one says so in the singular.
        try holding(1, for: "192.168.1.25") {
            let one = WaitHost(allow: { _ in }, answerPaths: { [] }, perAddress: 1)
            var config = InboxSettings()
            config.minimumFreeBytes = 0
            let response = answer {
                try InboxRoute(dataRoot: data.path, settings: config, waiting: one).respond(to: CGIRequest(
                    method: "GET", path: "/inbox", query: "anchor=\(anchor)&wait=30", headers: ["X-User-Key": "u1"],
                    environment: ["REMOTE_ADDR": "192.168.1.25"]))
            }
            #expect(response.status == 429)
            #expect(String(decoding: response.body, as: UTF8.self).contains("this address: 1 already waits for changes"))
        }
        // Its places free again, the address waits.
        #expect(feed("anchor=\(anchor)&wait=1", from: "192.168.1.23").status == 200)
    }
}
