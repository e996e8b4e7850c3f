import Foundation
import MockCloudClient

/// The app's sync, handed to one SyncEngine at launch: what it accepts is on
/// disk when the call returns; sending, retrying and following are its own.
final class BoxSync: Sendable {
    let engine: SyncEngine
    private let running: Task<Void, any Error>

    /// At launch. `token`: from the Keychain; the state directory never holds it.
    init(caPEM: [UInt8], caSHA256: String, token: String?, scans: ScanStore) throws {
        let trust = try TrustAnchor(pem: caPEM, from: "mockcloud-ca.crt", expectedSHA256: caSHA256)
        let transport = try URLSessionTransport(baseURL: URL(string: "https://192.168.1.20:8443")!, trust: trust)
        let client = BoxClient(
            configuration: ClientConfiguration(userKey: UserKey("u1")!, deviceID: DeviceID("iphone-1"), token: token),
            transport: transport)
        let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        // The mirror's scans come down into `scans`, each page with its anchor.
        engine = try SyncEngine(client: client, stateDirectory: support.appendingPathComponent("mockcloud"), store: scans)
        running = Task { [engine] in try await engine.run() }
    }

    deinit { running.cancel() }

    /// HealthKit's new and deleted samples (an anchored object query's results).
    func samplesChanged(added: [Sample], deleted: [String]) async throws {
        var items = try added.map {
            try UploadItem.sample(syncIdentifier: $0.syncIdentifier, syncVersion: $0.syncVersion, body: JSONText(validating: $0.json))
        }
        items += try deleted.map { try UploadItem.deletion(syncIdentifier: $0) }
        try await engine.enqueue(items)  // on disk now; sent whenever the box can be reached
    }

    /// The user switched units: this member only, edited now.
    func unitsChanged(imperial: Bool) async throws {
        try await engine.editSettings(JSONText(validating: #"{"unitSystem": "\#(imperial ? "imperial" : "metric")"}"#), at: Date())
    }

    /// The app came to the foreground, or the network changed.
    func appBecameActive() async { await engine.syncNow() }

    /// What the box did with it all.
    func watch() async {
        for await event in engine.events {
            switch event.kind {
            case .refused: print("not stored: \(event.refusals)")  // 409: the box holds a newer version
            case .boxSettings: _ = event.settings?.document  // apply it locally: every phone's edits are in it
            case .applied: print("\(event.ids.count) scans arrived")
            default: break  // uploaded, unreachable, …
            }
        }
    }
}
