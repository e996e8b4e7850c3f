import MockCloudClient
import MockCloudTestSupport
import Testing

/// The one temporary-directory helper, by another name here.
typealias TemporaryDirectoryPath = TemporaryDirectory

@Suite struct SettingsTests {
    @Test func a409HandsBackTheServersCurrentDocumentAndItsTag() async throws {
        let server = FakeServer { _, _ in
            FakeServer.json(409, #"{"error": "updatedAt is older; nothing was written", "current": {"updatedAt": "2026-01-02T00:00:00Z", "units": "metric"}}"#,
                            headers: [("etag", "\"abc\"")])
        }
        let write = try await client(server).putSettings(body(#"{"updatedAt": "2026-01-01T00:00:00Z"}"#))
        #expect(write == .conflict(status: 409, error: "updatedAt is older; nothing was written",
                                   current: Settings(document: body(#"{"updatedAt": "2026-01-02T00:00:00Z", "units": "metric"}"#), etag: "\"abc\"")))
    }

    @Test func aConditionalWriteWhoseAnswerWasLostIsNotSentAgain() async throws {
        let server = FakeServer { _, _ in .failure(.connection("reset")) }
        await #expect(throws: ClientError.self) {
            try await client(server).putSettings(body("{}"), ifMatch: "\"abc\"")
        }
        #expect(await server.requests.count == 1)
        #expect(await server.requests[0].headers.contains { $0.name == "If-Match" && $0.value == "\"abc\"" })
    }

    @Test func aMergePatchSaysItsContentType() async throws {
        let server = FakeServer { _, _ in FakeServer.json(200, #"{"a": 1}"#, headers: [("etag", "\"t\"")]) }
        let write = try await client(server).patchSettings(body(#"{"b": null}"#))
        #expect(write == .written(Settings(document: body(#"{"a": 1}"#), etag: "\"t\"")))
        let request = try #require(await server.requests.first)
        #expect(request.method == "PATCH" && request.headers.contains { $0 == ("Content-Type", "application/merge-patch+json") })
    }

    @Test func noSettingsStoredIsNil() async throws {
        let server = FakeServer { _, _ in FakeServer.json(404, #"{"error": "no settings stored for this user"}"#) }
        #expect(try await client(server).settings() == nil)
    }
}
