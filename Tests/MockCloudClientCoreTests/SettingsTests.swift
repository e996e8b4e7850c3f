import MockCloudClient
import MockCloudClientTestSupport
import MockCloudPortableTestSupport
import Testing

@Suite struct SettingsTests {
    @Test func a409HandsBackTheServersCurrentDocumentAndItsTag() async throws {
        let server = FakeServer { _, _ in
            FakeServer.json(409, #"{"error": "updatedAt is older; nothing was written", "current": {"updatedAt": "2026-01-02T00:00:00Z", "units": "metric"}}"#,
                            headers: [("etag", "\"abc\"")])
        }
        let write = try await client(server).putSettings(body(#"{"updatedAt": "2026-01-01T00:00:00Z"}"#))
        #expect(write == .conflict(status: 409, error: "updatedAt is older; nothing was written",
                                   current: BoxSettings(document: body(#"{"updatedAt": "2026-01-02T00:00:00Z", "units": "metric"}"#), etag: "\"abc\"")))
    }

    @Test func aConditionalWriteWhoseAnswerWasLostIsNotSentAgainBlindly() async throws {
        let server = FakeServer { _, _ in .failure(.connection("reset")) }
        await #expect(throws: ClientError.self) {
            try await client(server).putSettings(body("{}"), ifMatch: "\"abc\"")
        }
        let methods = await server.requests.map(\.method)
        #expect(methods.first == "PUT" && methods.dropFirst().allSatisfy { $0 == "GET" })  // read back, never re-PUT
        #expect(await server.requests[0].headers.contains { $0.name == "If-Match" && $0.value == "\"abc\"" })
    }

    /// The server's answer to a write that ran out of time: 503, "maybe".
    static let maybe = FakeServer.json(
        503, #"{"error": "request took too long; the change may have been made", "changed": "maybe"}"#)

    @Test func aMaybeOnAConditionalWriteThatLandedIsWrittenNotAConflict() async throws {
        let mine = #"{"updatedAt": "2026-01-02T00:00:00Z", "units": "metric"}"#
        let server = FakeServer { request, _ in
            request.method == "PUT"
                ? Self.maybe
                : FakeServer.json(200, #"{"updatedAt": "2026-01-02T00:00:00Z", "units": "metric", "serverReceivedAt": "20260102T000000.000001Z"}"#,
                                  headers: [("etag", "\"new\"")])
        }
        let write = try await client(server).putSettings(body(mine), ifMatch: "\"old\"")
        guard case .written(let stored) = write else { Issue.record("\(write)"); return }
        #expect(stored.etag == "\"new\"")
        #expect(await server.requests.map(\.method) == ["PUT", "GET"])
    }

    @Test func aMaybeOnAConditionalWriteThatDidNotLandIsSentAgain() async throws {
        let server = FakeServer { request, n in
            switch (request.method, n) {
            case ("PUT", 1): return Self.maybe
            case ("GET", _): return FakeServer.json(200, #"{"units": "imperial"}"#, headers: [("etag", "W/\"old\"")])
            default: return FakeServer.json(200, #"{"units": "metric"}"#, headers: [("etag", "\"new\"")])
            }
        }
        let write = try await client(server).putSettings(body(#"{"units": "metric"}"#), ifMatch: "\"old\"")
        #expect(write == .written(BoxSettings(document: body(#"{"units": "metric"}"#), etag: "\"new\"")))
        #expect(await server.requests.map(\.method) == ["PUT", "GET", "PUT"])
    }

    @Test func aMaybeOnAConditionalWriteWhenAnotherWriteLandedIsAConflictWithIt() async throws {
        let server = FakeServer { request, _ in
            request.method == "PATCH"
                ? Self.maybe
                : FakeServer.json(200, #"{"units": "imperial"}"#, headers: [("etag", "\"theirs\"")])
        }
        let write = try await client(server).patchSettings(body(#"{"units": "metric"}"#), ifMatch: "\"old\"")
        guard case .conflict(412, _, let current) = write else { Issue.record("\(write)"); return }
        #expect(current?.etag == "\"theirs\"")
    }

    @Test func aNoIsSentAgainEvenWhenConditional() async throws {
        let server = FakeServer { _, n in
            n == 1
                ? FakeServer.json(503, #"{"error": "storage busy; nothing was written", "changed": "no"}"#)
                : FakeServer.json(200, #"{"a": 1}"#, headers: [("etag", "\"t\"")])
        }
        let write = try await client(server).putSettings(body(#"{"a": 1}"#), ifMatch: "\"s\"")
        #expect(write == .written(BoxSettings(document: body(#"{"a": 1}"#), etag: "\"t\"")))
        #expect(await server.requests.map(\.method) == ["PUT", "PUT"])
    }

    @Test func aMergePatchSaysItsContentType() async throws {
        let server = FakeServer { _, _ in FakeServer.json(200, #"{"a": 1}"#, headers: [("etag", "\"t\"")]) }
        let write = try await client(server).patchSettings(body(#"{"b": null}"#))
        #expect(write == .written(BoxSettings(document: body(#"{"a": 1}"#), etag: "\"t\"")))
        let request = try #require(await server.requests.first)
        #expect(request.method == "PATCH" && request.headers.contains { $0 == ("Content-Type", "application/merge-patch+json") })
    }

    @Test func noSettingsStoredIsNil() async throws {
        let server = FakeServer { _, _ in FakeServer.json(404, #"{"error": "no settings stored for this user"}"#) }
        #expect(try await client(server).settings() == nil)
    }
}
