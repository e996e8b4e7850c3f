import MockCloudClient
import MockCloudClientTestSupport
import Testing

/// The app's launch reconciliation, one test per case it reports.
@Suite struct ReconciliationTests {
    static let older = #"{"updatedAt": "2026-01-01T10:00:00Z", "heightCm": 175}"#
    static let newer = #"{"updatedAt": "2026-01-01T10:05:00+00:00", "heightCm": 180}"#

    @Test func nothingOnTheBoxStoresTheLocalCopyIfNothingIsThere() async throws {
        let server = FakeServer { request, _ in
            request.method == "GET"
                ? FakeServer.json(404, #"{"error": "no settings stored for this user"}"#)
                : FakeServer.json(200, Self.older, headers: [("etag", "\"a\"")])
        }
        let result = try await client(server).reconcileSettings(local: body(Self.older))
        #expect(result == .createdOnBox(BoxSettings(document: body(Self.older), etag: "\"a\"")))
        let put = try #require(await server.requests.last)
        #expect(put.method == "PUT" && put.headers.contains { $0 == ("If-None-Match", "*") })
    }

    @Test func anUnreachableBoxKeepsTheLocalCopy() async throws {
        let server = FakeServer { _, _ in .failure(.connection("Connection refused")) }
        let result = try await client(server, attempts: 2).reconcileSettings(local: body(Self.older))
        guard result.kind == .unreachable, result.error?.code == .unavailable else { Issue.record("\(result)"); return }
        #expect(await server.requests.allSatisfy { $0.method == "GET" })
    }

    @Test func aNewerBoxDocumentIsHandedBackAndNothingIsWritten() async throws {
        let server = FakeServer { _, _ in FakeServer.json(200, Self.newer, headers: [("etag", "\"b\"")]) }
        let result = try await client(server).reconcileSettings(local: body(Self.older))
        #expect(result == .boxIsNewer(BoxSettings(document: body(Self.newer), etag: "\"b\"")))
        #expect(await server.requests.map(\.method) == ["GET"])
    }

    @Test func aNewerLocalCopyIsPushedOnTheBoxsTag() async throws {
        let server = FakeServer { request, _ in
            request.method == "GET"
                ? FakeServer.json(200, Self.older, headers: [("etag", "\"a\"")])
                : FakeServer.json(200, Self.newer, headers: [("etag", "\"c\"")])
        }
        let result = try await client(server).reconcileSettings(local: body(Self.newer))
        #expect(result == .pushedLocal(BoxSettings(document: body(Self.newer), etag: "\"c\"")))
        let put = try #require(await server.requests.last)
        #expect(put.method == "PUT" && put.headers.contains { $0 == ("If-Match", "\"a\"") })
    }

    @Test func theSameInstantInAnotherSpellingIsInSync() async throws {
        let same = #"{"updatedAt": "20260101T100500Z", "heightCm": 180}"#
        let server = FakeServer { _, _ in FakeServer.json(200, same, headers: [("etag", "\"d\"")]) }
        #expect(try await client(server).reconcileSettings(local: body(Self.newer))
            == .inSync(BoxSettings(document: body(same), etag: "\"d\"")))
    }

    @Test func aPushThatLosesARaceIsJudgedAgainstWhatWon() async throws {
        let newest = #"{"updatedAt": "2026-01-01T11:00:00Z", "heightCm": 181}"#
        let server = FakeServer { request, n in
            switch (request.method, n) {
            case ("GET", 1): return FakeServer.json(200, Self.older, headers: [("etag", "\"a\"")])
            case ("PUT", _): return FakeServer.json(412, #"{"error": "precondition failed"}"#)
            default: return FakeServer.json(200, newest, headers: [("etag", "\"e\"")])
            }
        }
        let result = try await client(server).reconcileSettings(local: body(Self.newer))
        #expect(result == .boxIsNewer(BoxSettings(document: body(newest), etag: "\"e\"")))
    }
}
