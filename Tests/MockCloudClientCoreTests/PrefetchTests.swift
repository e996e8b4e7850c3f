import MockCloudClient
import MockCloudClientTestSupport
import MockCloudWire
import Testing

/// The feed asks for the next page while its consumer works on the current
/// one; that request must not outlive the consumer (through up to a dozen
/// retries, it would keep the radio and the box busy for nothing).
@Suite struct PrefetchTests {
    /// The first page, with more to come: the iterator asks for the next
    /// one at once, which the server holds until it is cancelled.
    static let first = page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: true)

    static func feed(_ server: HoldingServer) -> ChangeFeed {
        BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!), transport: server).changes(since: nil)
    }

    /// Waits (without a clock) until the server saw the prefetch cancelled.
    static func cancelled(_ server: HoldingServer) async -> Int {
        for _ in 0..<10_000 {
            let count = await server.waitsCancelled
            if count > 0 { return count }
            await Task.yield()
            try? await Task.sleep(for: .milliseconds(1))
        }
        return await server.waitsCancelled
    }

    @Test func droppingTheIteratorCancelsThePrefetch() async throws {
        let server = HoldingServer(first: Self.first)
        do {
            var iterator = Self.feed(server).makeAsyncIterator()
            #expect(try await iterator.next()?.messages.map(\.id.rawValue) == ["a"])
            while await server.requestCount() < 2 { await Task.yield() }  // the prefetch is in flight
        }
        #expect(await Self.cancelled(server) == 1)
    }

    @Test func cancellingTheConsumerWhileItWorksOnAPageCancelsThePrefetch() async throws {
        let server = HoldingServer(first: Self.first)
        let (firstPage, signal) = AsyncStream<Void>.makeStream()
        let consumer = Task {
            for try await _ in Self.feed(server) {
                signal.yield()
                try await Task.sleep(for: .seconds(600))  // the app's work on the page
            }
        }
        for await _ in firstPage { break }
        consumer.cancel()
        #expect(await Self.cancelled(server) == 1)
        guard await server.waitsCancelled == 1 else { return }  // else the consumer waits out the server's hold
        await #expect(throws: CancellationError.self) { try await consumer.value }
    }

    @Test func cancellingTheConsumerWhileItWaitsForThePrefetchCancelsIt() async throws {
        let server = HoldingServer(first: Self.first)
        let consumer = Task {
            var iterator = Self.feed(server).makeAsyncIterator()
            _ = try await iterator.next()
            _ = try await iterator.next()  // waits for the held prefetch
        }
        while await server.requestCount() < 2 { await Task.yield() }
        consumer.cancel()
        #expect(await Self.cancelled(server) == 1)
        guard await server.waitsCancelled == 1 else { return }  // else the consumer waits out the server's hold
        await #expect(throws: CancellationError.self) { try await consumer.value }
    }
}
