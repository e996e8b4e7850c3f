import MockCloudClient
import MockCloudWire
import MockCloudClientTestSupport
import Testing

@Suite struct UploadTests {
    @Test func twoThousandFiveHundredItemsGoAsThreeRequestsOfAtMostOneThousand() async throws {
        let server = FakeServer { request, _ in FakeServer.storeAll(request) }
        let items = (0..<2500).map { UploadItem.put(id("s-\($0)"), version: 1, body: body(#"{"n": \#($0)}"#)) }
        let outcomes = try await client(server).upload(items)
        let sizes = await server.requests.map { FakeServer.items($0).count }
        #expect(sizes == [1000, 1000, 500])
        #expect(outcomes.count == 2500 && outcomes.allSatisfy(\.isDone))
        let sentIDs = await server.requests.flatMap { FakeServer.items($0).compactMap { $0["id"]?.stringValue } }
        #expect(sentIDs == items.map(\.id.rawValue))
    }

    @Test func requestsStayWithinEightMiBAndAnOversizedItemIsRefusedUnsent() async throws {
        let server = FakeServer { request, _ in FakeServer.storeAll(request) }
        let big = String(repeating: "x", count: 200 << 10)
        var items = (0..<90).map { UploadItem.put(id("b-\($0)"), body: body(#"{"blob": "\#(big)"}"#)) }
        items.insert(.put(id("huge"), body: body(#"{"blob": "\#(big)\#(big)"}"#)), at: 45)
        let outcomes = try await client(server).upload(items)
        let requests = await server.requests
        #expect(requests.allSatisfy { $0.body.count <= 8 << 20 })
        #expect(requests.count == 3)  // 40 bodies of 200 KiB fit in 8 MiB, 41 do not
        #expect(outcomes[45] == .rejected(status: 413, error: "body of 409612 bytes is over the 262144-byte limit"))
        #expect(!requests.contains { $0.body.firstRange(of: Array("huge".utf8)) != nil })
        #expect(outcomes.enumerated().allSatisfy { $0.offset == 45 || $0.element.isDone })
    }

    /// `afterEach` reports every item once, those refused before sending
    /// (over the body limit) with the request beside them: at the start, at
    /// a request's edge, at the end, and when nothing is sent at all.
    @Test func everyItemIsReportedOnceRefusedOnesIncluded() async throws {
        let server = FakeServer { request, _ in FakeServer.storeAll(request) }
        let huge = body(#"{"blob": "\#(String(repeating: "x", count: 300 << 10))"}"#)
        let small = body("{}")
        let client = BoxClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, limits: BulkLimits(maxItems: 2, maxRequestBytes: 8 << 20, maxItemBodyBytes: 256 << 10),
                uploadsInFlight: 1),
            transport: server)
        let kinds = [huge, small, small, huge, small, huge, huge]
        let items = kinds.enumerated().map { UploadItem.put(id("i-\($0.offset)"), body: $0.element) }
        var ranges: [Range<Int>] = []
        var reported: [Int: UploadOutcome] = [:]
        let outcomes = try await client.upload(items) { range, outcomes in
            ranges.append(range)
            for (index, outcome) in zip(range, outcomes) { reported[index] = outcome }
        }
        #expect(ranges == [0..<4, 4..<7])
        #expect(reported.count == 7 && (0..<7).allSatisfy { reported[$0] == outcomes[$0] })
        var alone: [Range<Int>] = []
        _ = try await client.upload([.put(id("only"), body: huge)]) { range, _ in alone.append(range) }
        let requests = await server.requests.count
        #expect(alone == [0..<1] && requests == 2)
    }

    @Test func aTooManyRequestsAnswerWaitsItsRetryAfterThenSendsTheSameBytes() async throws {
        let waits = Waits()
        let server = FakeServer { request, n in
            n == 1 ? FakeServer.json(429, #"{"error": "too many requests"}"#, headers: [("retry-after", "3")])
                : FakeServer.storeAll(request)
        }
        let outcomes = try await client(server, waits: waits).upload([.put(id("a"), body: body("{}"))])
        let requests = await server.requests
        #expect(waits.seconds == [3])
        #expect(requests.count == 2 && requests[0].body == requests[1].body)
        #expect(outcomes == [.stored(seq: 1, created: true)])
    }

    @Test func aCutConnectionAndA502AreRetriedWithGrowingBackoff() async throws {
        let waits = Waits()
        let server = FakeServer { request, n in
            switch n {
            case 1: return .failure(.connection("reset"))
            case 2: return FakeServer.json(502, #"{"error": "bad gateway"}"#)
            default: return FakeServer.storeAll(request)
            }
        }
        _ = try await client(server, waits: waits).upload([.put(id("a"), body: body("{}"))])
        #expect(waits.seconds.count == 2)
        #expect((0.05...0.1).contains(waits.seconds[0]) && (0.1...0.2).contains(waits.seconds[1]))
    }

    @Test func anUntrustedCertificateIsNeverRetried() async throws {
        let server = FakeServer { _, _ in .failure(.untrusted("self-signed certificate")) }
        await #expect(throws: ClientError.untrusted("self-signed certificate")) {
            try await client(server).upload([.put(id("a"), body: body("{}"))])
        }
        #expect(await server.requests.count == 1)
    }

    @Test func retriesEndInUnavailableAfterTheLastAttempt() async throws {
        let server = FakeServer { _, _ in .failure(.connection("Couldn't connect to server")) }
        await #expect(throws: ClientError.unavailable("Couldn't connect to server (5 attempts)")) {
            try await client(server).upload([.put(id("a"), body: body("{}"))])
        }
    }

    @Test func eachResultBecomesItsOutcome() async throws {
        let server = FakeServer { _, _ in
            FakeServer.json(200, #"{"results": [{"id": "a", "status": 200, "seq": 7}, {"id": "b", "status": 404, "error": "no message with this id"}, {"id": "c", "status": 409, "error": "lower", "current": \#(envelope("c", version: 5, seq: 3))}, {"id": "d", "status": 507, "error": "inbox full"}]}"#)
        }
        let outcomes = try await client(server).upload([
            .put(id("a"), body: body("{}")), .delete(id("b")), .put(id("c"), version: 1, body: body("{}")),
            .put(id("d"), body: body("{}")),
        ])
        #expect(outcomes[0] == .stored(seq: 7, created: false))
        #expect(outcomes[1] == .deleted(seq: nil))
        guard case .conflict(let current) = outcomes[2] else { Issue.record("not a conflict: \(outcomes[2])"); return }
        #expect(current.version == 5)
        #expect(outcomes[3] == .rejected(status: 507, error: "inbox full"))
    }
}
