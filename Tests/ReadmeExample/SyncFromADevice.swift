import Foundation
import MockCloudClient

/// The app's own store of the mirror's scans, with the feed anchor kept in
/// the same place and changed in the same step (a database transaction in
/// a real app; an actor here).
actor ScanStore: ChangeApplier {
    private(set) var scans: [MessageID: JSONText] = [:]
    private var anchor: Anchor?

    func savedAnchor() async throws -> Anchor? { anchor }

    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {
        for scan in changes.messages { scans[scan.id] = scan.body }
        for gone in changes.deleted { scans[gone.id] = nil }
        if let live = changes.liveIDs { scans = scans.filter { live.contains($0.key) } }  // after a 410
        if let anchor { self.anchor = anchor }
    }
}

/// One HealthKit sample as the app holds it: its sync identifier and
/// version (HKMetadataKeySyncIdentifier / HKMetadataKeySyncVersion) and
/// its values as JSON.
struct Sample {
    var syncIdentifier: String  // "nm-<scan>-weight"
    var syncVersion: Int
    var json: String
}

/// At launch: settings reconciled, new samples up, the mirror's scans down.
/// `editedSettings`: the settings members changed on the phone since the
/// last launch, each with the time of its change.
func syncWithTheBox(
    caPEM: [UInt8], caSHA256: String, settings: JSONText?, editedSettings: [String: Date], samples: [Sample],
    deletedSamples: [String], scans: ScanStore
) async throws -> SettingsReconciliation {
    let trust = try TrustAnchor(pem: caPEM, from: "mockcloud-ca.crt", expectedSHA256: caSHA256)
    #if canImport(Darwin)
    let transport = try URLSessionTransport(baseURL: URL(string: "https://192.168.1.20:8443")!, trust: trust)
    #else
    let transport = try CurlTransport(baseURL: URL(string: "https://192.168.1.20:8443")!, trust: trust)
    #endif
    let client = BoxClient(
        configuration: ClientConfiguration(userKey: UserKey("u1")!, deviceID: DeviceID("iphone-1")),
        transport: transport)

    // 1. Settings: which case it was says what to do locally. Per field when
    //    the box keeps member times: an edit made on another phone meanwhile
    //    (of another member) is kept, and so is this phone's.
    let reconciled = try await client.reconcileSettings(local: settings, editedFields: editedSettings)
    switch reconciled.kind {
    case .boxIsNewer, .mergedPerField: _ = reconciled.documentToApply  // apply it locally: both phones' edits are in it
    case .unreachable: break  // keep the local copy and the edits; try again later
    default: break  // createdOnBox, pushedLocal, inSync: the box holds what the phone holds
    }

    // 2. HealthKit samples up, by sync identifier and version: a retry converges.
    var items = try samples.map {
        try UploadItem.sample(syncIdentifier: $0.syncIdentifier, syncVersion: $0.syncVersion,
                              body: JSONText(validating: $0.json))
    }
    items += try deletedSamples.map { try UploadItem.deletion(syncIdentifier: $0) }
    for (item, outcome) in zip(items, try await client.upload(items)) where !outcome.isDone {
        print("not stored: \(item.id): \(outcome)")  // 409: the box holds a newer version
    }

    // 3. The mirror's scans down, each page applied with its anchor; a 410
    //    becomes a full read that drops what the box no longer holds.
    let summary = try await client.sync(into: scans)
    print("\(summary.messages) scans, \(summary.deletions) deletions\(summary.resynced ? " (full read)" : "")")
    return reconciled
}
