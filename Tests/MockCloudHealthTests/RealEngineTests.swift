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
        let queued = try await first.pending.uploads
        #expect(queued.count == 3, "the three other-source samples, not this app's")
        #expect(FileManager.default.fileExists(atPath: directory.file("state/health/bodyMass.anchor")), "the anchor is in the engine's state directory")

        // The process died after the enqueue, before the anchor was written.
        try FileManager.default.removeItem(atPath: directory.file("state/health/bodyMass.anchor"))
        await first.close()
        let second = try Self.engine(directory)
        try await HealthImport(healthStore: store, engine: second, types: [.bodyMass]).importChanges()
        #expect(try await second.pending.uploads == queued, "the same items, each once: nothing lost, nothing doubled")
        await second.close()
    }
}

/// HealthKitScans behind the real client's feed reader (`sync(into:)`),
/// over a transport that answers `GET /inbox` as the box does.
@Suite struct ScansThroughTheFeedTests {
    /// The box's inbox: a full read holds `live`; an incremental read
    /// after `goneAfter` is refused with 410 (the box restored from a backup).
    actor Inbox: HTTPTransport {
        var live: [(id: String, version: Int64, body: String)] = []
        var gone = false

        func set(_ scans: [(id: String, version: Int64, body: String)], gone: Bool) {
            live = scans
            self.gone = gone
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            guard request.method == "GET", request.target.hasPrefix("/inbox?") else {
                return TransportResponse(status: 404, headers: [], body: Array(#"{"error": "not here"}"#.utf8))
            }
            if request.target.contains("anchor="), gone {
                return TransportResponse(status: 410, headers: [], body: Array(#"{"error": "gone", "reason": "replaced"}"#.utf8))
            }
            let messages = live.enumerated().map { index, scan in
                #"{"id": "\#(scan.id)", "version": \#(scan.version), "seq": \#(index + 1), "source": "mirror", "serverReceivedAt": "20260518T044304.134233Z", "body": \#(scan.body)}"#
            }
            let page = #"{"messages": [\#(messages.joined(separator: ", "))], "deleted": [], "anchor": "00000000000000b2.0.\#(live.count)", "hasMore": false}"#
            return TransportResponse(status: 200, headers: [(name: "Content-Type", value: "application/json")], body: Array(page.utf8))
        }
    }

    @Test func afterA410TheFullReadLeavesHealthKitWithWhatTheBoxHoldsAndOtherSourcesUntouched() async throws {
        let inbox = Inbox(), store = FakeHealthStore(), next = ForwardedStore()
        let client = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!, deviceID: DeviceID("iphone-1")), transport: inbox)
        let scans = HealthKitScans(healthStore: store, forwardingTo: next)
        let body = #"{"measuredAt": "2026-05-18T04:43:04Z", "weightKg": 72.4, "bodyFatPercent": 18.5}"#
        await inbox.set([("s1", 1, body), ("s2", 1, body)], gone: false)
        _ = try await client.sync(into: scans)
        #expect(await store.own.keys.sorted() == ["nm-s1-bodyFat", "nm-s1-leanMass", "nm-s1-weight", "nm-s2-bodyFat", "nm-s2-leanMass", "nm-s2-weight"])
        await store.add(HealthSample(type: .bodyMass, value: 80, start: Date(), sourceBundleIdentifier: "com.withings.health"))

        await inbox.set([("s1", 1, body)], gone: true)  // restored from a backup without s2
        let summary = try await client.sync(into: scans)
        #expect(summary.resynced)
        #expect(await store.own.keys.sorted() == ["nm-s1-bodyFat", "nm-s1-leanMass", "nm-s1-weight"])
        #expect(await store.samples.contains { $0.sourceBundleIdentifier == "com.withings.health" })
        #expect(await next.anchor == Anchor("00000000000000b2.0.1"))
    }
}
