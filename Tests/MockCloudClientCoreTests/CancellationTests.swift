import MockCloudClient
import MockCloudClientTestSupport
import Testing

/// A cancelled task stops retrying at once and throws `CancellationError`.
@Suite struct CancellationTests {
    @Test func aCancelledTaskStopsItsRetries() async throws {
        let server = FakeServer { _, _ in .failure(.connection("reset")) }
        let sleeping = BoxClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, retry: RetryPolicy(maxAttempts: 50, initialDelay: .seconds(30), maxDelay: .seconds(30), maxRetryAfter: .seconds(60))),
            transport: server)
        let task = Task { try await sleeping.settings() }
        while await server.requests.isEmpty { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await server.requests.count == 1)  // no retry after the cancel, no 30 s wait
    }

    @Test func aTransportThatStoppedForACancelIsCancelled() async throws {
        let server = StoppedTransport()
        let stopped = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!), transport: server)
        await #expect(throws: CancellationError.self) { try await stopped.settings() }
        #expect(await server.sent == 1)  // not retried as a connection failure
    }
}

/// A transport whose every transfer was stopped by a cancel.
private actor StoppedTransport: HTTPTransport {
    private(set) var sent = 0

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent += 1
        throw CancellationError()
    }
}
