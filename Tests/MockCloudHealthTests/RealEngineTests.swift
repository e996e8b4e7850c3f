import Foundation
import MockCloudClient
import MockCloudHealth
import MockCloudTestSupport
import MockCloudWire
import Testing

/// HealthImport over the real SyncEngine (its journal on disk), the box
/// away: what a kill between the enqueue and the anchor leaves queued.
@Suite struct RealEngineTests {
    /// The box is never reached in these tests.
    struct NoBox: HTTPTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { throw CancellationError() }
    }

    static func engine(_ directory: TemporaryDirectory) throws -> SyncEngine {
        let client = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!, deviceID: DeviceID("iphone-1")), transport: NoBox())
        return try SyncEngine(client: client, stateDirectory: URL(fileURLWithPath: directory.file("state")), store: ForwardedStore())
    }

    @Test func aKillBeforeTheAnchorQueuesEachSampleOnceInTheEnginesJournal() async throws {
        let directory = try TemporaryDirectory(prefix: "mockcloud-health")
        let store = FakeHealthStore()
        for value in [70.0, 71, 72] {
            await store.add(HealthSample(type: .bodyMass, value: value, start: Date(timeIntervalSince1970: 1_779_000_000 + value),
                                         sourceBundleIdentifier: "com.withings.health", sourceName: "Withings"))
        }
        try await store.save([HealthSample(type: .bodyMass, value: 69, start: Date(), syncIdentifier: "nm-s1-weight", syncVersion: 1)])
        let first = try Self.engine(directory)
        try await HealthImport(healthStore: store, engine: first, types: [.bodyMass]).importChanges()
        let queued = await first.pending.uploads
        #expect(queued.count == 3, "the three other-source samples, not this app's")
        #expect(FileManager.default.fileExists(atPath: directory.file("state/health/bodyMass.anchor")), "the anchor is in the engine's state directory")

        // The process died after the enqueue, before the anchor was written.
        try FileManager.default.removeItem(atPath: directory.file("state/health/bodyMass.anchor"))
        await first.close()
        let second = try Self.engine(directory)
        try await HealthImport(healthStore: store, engine: second, types: [.bodyMass]).importChanges()
        #expect(await second.pending.uploads == queued, "the same items, each once: nothing lost, nothing doubled")
        await second.close()
    }
}
