import Foundation
import MockCloudClient
import MockCloudClientTestSupport
import MockCloudWire
import Testing

/// Following the feed and the settings with waiting requests
/// (`changes(since:follow:)`, `settingsUpdates(after:)`): what is asked,
/// what is handed out, and how a follow ends.
@Suite struct FollowTests {
    @Test func aFollowWaitsFromTheLastAnchorAndHandsOutOnlyAnswersWithNews() async throws {
        let server = FakeServer { _, n in
            switch n {
            case 1: return FakeServer.json(200, page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
            case 2: return FakeServer.json(200, page([], anchor: "aa.0.1", hasMore: false))  // the wait ran out
            case 3: return FakeServer.json(200, page([envelope("b", version: 1, seq: 2)], anchor: "aa.0.2", hasMore: false))
            default: return FakeServer.json(200, page([], anchor: "aa.0.3", hasMore: false))  // past an own echo
            }
        }
        var pages: [ChangePage] = []
        for try await page in client(server).changes(since: Anchor("aa.0.0"), follow: true) {
            pages.append(page)
            if pages.count == 3 { break }
        }
        #expect(pages.map { $0.messages.map(\.id.rawValue) } == [["a"], ["b"], []])
        #expect(pages.map(\.anchor) == [Anchor("aa.0.1"), Anchor("aa.0.2"), Anchor("aa.0.3")])
        #expect(pages.allSatisfy { $0.anchorIsFinal })
        let targets = await server.requests.map(\.target)
        #expect(targets == ["/inbox?limit=1000&anchor=aa.0.0&exclude-source=phone-1",
                            "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30",
                            "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30",
                            "/inbox?limit=1000&anchor=aa.0.2&exclude-source=phone-1&wait=30"])
    }

    @Test func aFullReadIsFollowedByWaitsThatExcludeTheDevicesOwnWrites() async throws {
        let server = FakeServer { _, n in
            n == 1 ? FakeServer.json(200, page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
                : FakeServer.json(200, page([envelope("b", version: 1, seq: 2)], anchor: "aa.0.2", hasMore: false))
        }
        var pages: [ChangePage] = []
        for try await page in client(server).changes(since: nil, follow: true) {
            pages.append(page)
            if pages.count == 2 { break }
        }
        #expect(pages[0].isFullRead && pages[0].liveIDs == [id("a")])
        #expect(!pages[1].isFullRead && pages[1].liveIDs == nil)
        #expect(await server.requests.map(\.target)
            == ["/inbox?limit=1000", "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30"])
    }

    @Test func a410DuringTheFollowIsAFullReadAndThenWaitsAgain() async throws {
        let server = FakeServer { _, n in
            switch n {
            case 1: return FakeServer.json(200, page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
            case 2: return FakeServer.json(410, #"{"error": "anchor is older than the deletions this inbox still keeps; restart without an anchor"}"#)
            case 3: return FakeServer.json(200, page([envelope("a", version: 1, seq: 1), envelope("c", version: 1, seq: 7)],
                                                     anchor: "aa.1.7", hasMore: false))
            default: return FakeServer.json(200, page([envelope("d", version: 1, seq: 8)], anchor: "aa.1.8", hasMore: false))
            }
        }
        var pages: [ChangePage] = []
        for try await page in client(server).changes(since: Anchor("aa.0.0"), follow: true) {
            pages.append(page)
            if pages.count == 3 { break }
        }
        #expect(pages[1].startsResync && pages[1].isFullRead && pages[1].liveIDs == [id("a"), id("c")])
        #expect(pages[1].messages.map(\.id.rawValue) == ["c"])  // "a" at seq 1 was handed out already
        #expect(pages[2].messages.map(\.id.rawValue) == ["d"] && !pages[2].isFullRead)
        #expect(await server.requests.map(\.target).suffix(2)
            == ["/inbox?limit=1000", "/inbox?limit=1000&anchor=aa.1.7&exclude-source=phone-1&wait=30"])
    }

    @Test func aBoxUnreachableThroughEveryRetryIsWaitedOutAndFollowedAgain() async throws {
        let server = FakeServer { _, n in
            switch n {
            case 1: return FakeServer.json(200, page([], anchor: "aa.0.1", hasMore: false))
            case 2, 3: return .failure(.connection("Connection refused"))
            default: return FakeServer.json(200, page([envelope("b", version: 1, seq: 2)], anchor: "aa.0.2", hasMore: false))
            }
        }
        let waits = Waits()
        var pages: [ChangePage] = []
        for try await page in client(server, waits: waits, attempts: 2).changes(since: Anchor("aa.0.1"), follow: true) {
            pages.append(page)
            if pages.count == 2 { break }
        }
        #expect(pages.map { $0.messages.map(\.id.rawValue) } == [[], ["b"]])
        #expect((0.5...1).contains(waits.seconds.last ?? 0))  // the policy's longest delay (jittered), then the same wait again
        #expect(await server.requests.map(\.target).last == "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30")
    }

    /// The box's answer to a wait past its address's share of the waits.
    static let shareTaken = FakeServer.json(
        429, #"{"error": "too many waiting requests from this address: 4 already wait for changes, its share of the "#
            + #"server's 48 places (MOCKCLOUD_WAITS_PER_ADDRESS); retry after 5 seconds, or end a wait it no longer needs"}"#,
        headers: [("retry-after", "5")])

    @Test func aWaitRefusedForItsAddresssShareIsSentAgainOnlyAfterRetryAfter() async throws {
        let server = FakeServer { _, n in
            switch n {
            case 1: return FakeServer.json(200, page([], anchor: "aa.0.1", hasMore: false))
            case 2, 3, 4: return Self.shareTaken
            default: return FakeServer.json(200, page([envelope("b", version: 1, seq: 2)], anchor: "aa.0.2", hasMore: false))
            }
        }
        let waits = Waits()
        var pages: [ChangePage] = []
        for try await page in client(server, waits: waits).changes(since: Anchor("aa.0.0"), follow: true) {
            pages.append(page)
            if pages.count == 2 { break }
        }
        #expect(pages.map { $0.messages.map(\.id.rawValue) } == [[], ["b"]])
        // One request per Retry-After: the box is not asked again sooner.
        #expect(waits.seconds == [5, 5, 5])
        #expect(Array(await server.requests.map(\.target).dropFirst())
            == Array(repeating: "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30", count: 4))
    }

    @Test func aFollowRefusedThroughEveryAttemptStillWaitsBeforeEachRequest() async throws {
        let server = FakeServer { _, n in
            n <= 7 ? Self.shareTaken : FakeServer.json(200, #"{"units": "metric"}"#, headers: [("etag", #""e1""#)])
        }
        let waits = Waits()
        for try await settings in client(server, waits: waits, attempts: 3).settingsUpdates(after: nil) {
            #expect(settings?.etag == #""e1""#)
            break
        }
        // Three attempts (5 s apart), the policy's longest delay (jittered), three more, the delay, then the answer:
        // never two requests without a wait between them.
        let seen = waits.seconds
        #expect(seen.count == 7 && [0, 1, 3, 4, 6].allSatisfy { seen[$0] == 5 } && [2, 5].allSatisfy { (0.5...1).contains(seen[$0]) })
        #expect(await server.requests.count == 8)
    }

    @Test func cancellingTheTaskEndsAFollowAtOnceWithCancellationError() async throws {
        let server = HoldingServer(first: page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
        let follow = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!), transport: server)
        let (firstPage, signal) = AsyncStream<Void>.makeStream()
        let counted = Counter()
        let task = Task { () throws -> Void in
            for try await _ in follow.changes(since: nil, follow: true) {
                counted.add()
                signal.yield()
            }
        }
        for await _ in firstPage { break }
        let started = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(counted.value == 1)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await server.waitsCancelled == 1)
    }

    @Test func settingsUpdatesHandOutEachNewDocumentAndADeletion() async throws {
        let server = FakeServer { _, n in
            switch n {
            case 1: return FakeServer.json(200, #"{"units": "metric"}"#, headers: [("etag", #""e1""#)])
            case 2: return .success(TransportResponse(status: 304, headers: [("etag", #""e1""#)], body: []))
            case 3: return FakeServer.json(200, #"{"units": "imperial"}"#, headers: [("etag", #""e2""#)])
            default: return FakeServer.json(404, #"{"error": "no settings stored for this user"}"#)
            }
        }
        var seen: [BoxSettings?] = []
        for try await settings in client(server).settingsUpdates(after: nil) {
            seen.append(settings)
            if seen.count == 3 { break }
        }
        #expect(seen.map { $0?.etag } == [#""e1""#, #""e2""#, nil])
        #expect(seen[1]?.document.description == #"{"units": "imperial"}"#)
        let requests = await server.requests
        #expect(requests.allSatisfy { $0.target == "/user/settings?wait=30" })
        #expect(requests.map { $0.headers.first { $0.name == "If-None-Match" }?.value }
            == [#""""#, #""e1""#, #""e1""#, #""e2""#])
    }
}

/// Answers the first request with `first` and holds every later one until
/// its task is cancelled, as a box holds a wait; counts the cancelled ones.
actor HoldingServer: HTTPTransport {
    let first: String
    private var answered = false
    private(set) var waitsCancelled = 0
    private var requests = 0

    func requestCount() -> Int { requests }

    init(first: String) { self.first = first }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        requests += 1
        if !answered {
            answered = true
            return TransportResponse(status: 200, headers: [], body: Array(first.utf8))
        }
        do {
            try await Task.sleep(nanoseconds: 600_000_000_000)
        } catch {
            waitsCancelled += 1
            throw CancellationError()
        }
        throw TransportError.connection("held for ten minutes")
    }
}

/// A count shared with a task.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
