import MockCloudClient
import Testing

/// A cancelled task stops retrying at once and says it was cancelled.
@Suite struct CancellationTests {
    @Test func aCancelledTaskStopsItsRetries() async throws {
        let server = FakeServer { _, _ in .failure(.connection("reset")) }
        let sleeping = MockCloudClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, retry: RetryPolicy(maxAttempts: 50, initialDelay: 30, maxDelay: 30, maxRetryAfter: 60)),
            transport: server)
        let task = Task { try await sleeping.settings() }
        while await server.requests.isEmpty { await Task.yield() }
        task.cancel()
        await #expect(throws: ClientError.cancelled) { try await task.value }
        #expect(await server.requests.count == 1)  // no retry after the cancel, no 30 s wait
    }

    @Test func aTransportThatStoppedForACancelIsCancelled() async throws {
        let server = FakeServer { _, _ in .failure(.cancelled) }
        await #expect(throws: ClientError.cancelled) { try await client(server).settings() }
        #expect(await server.requests.count == 1)
    }
}
