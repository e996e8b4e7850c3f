import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// The mirror's scans into HealthKit, then on to the app's own store: a
/// `ChangeApplier` to give `SyncEngine` (or `sync(into:)`) in place of the
/// app's store.
///
/// Each page, in this order:
/// 1. its scans' samples are saved (`ScanMapping`; sync identifiers
///    `nm-<scanId>-<metric>`, the message's version as sync version, so a
///    scan that grows replaces its samples in place);
/// 2. each deleted scan's samples are deleted by sync identifier, from this
///    app's source only;
/// 3. after a 410's full read (its last page), this app's `nm-` samples of
///    scans the box no longer holds are deleted;
/// 4. the page and its anchor go to the app's store, which keeps the anchor.
///
/// A failure at any step (the phone locked: HealthKit saves, but cannot
/// query) fails the page: the engine reads it again later, never skips it,
/// and a replay changes nothing that was done (the sync identifiers).
public actor HealthKitScans: ChangeApplier {
    nonisolated let healthStore: any HealthStore
    nonisolated let next: any ChangeApplier
    nonisolated let mapping: ScanMapping
    /// The settings' `heightCm` (BMI and the height samples); nil until known.
    public private(set) var heightCm: Double?

    /// - Parameters:
    ///   - healthStore: where the samples go (`HKHealthStore` on iOS).
    ///   - next: the app's own store of the scans; it keeps the anchor.
    ///   - mapping: how a scan message becomes samples.
    public init(healthStore: some HealthStore, forwardingTo next: some ChangeApplier, mapping: ScanMapping = .mirror) {
        self.healthStore = healthStore
        self.next = next
        self.mapping = mapping
    }

    public nonisolated func savedAnchor() async throws -> Anchor? { try await next.savedAnchor() }

    public func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {
        let height = heightCm
        let samples = changes.messages.flatMap { envelope in
            envelope.body.map { mapping.samples(envelope.id, envelope.version, $0, height) } ?? []
        }
        if !samples.isEmpty { try await healthStore.save(samples) }
        let deleted = Set(changes.deleted.flatMap { gone in ScanMapping.metrics.map { ScanMapping.syncIdentifier(scan: gone.id, metric: $0.metric) } })
        if !deleted.isEmpty { try await healthStore.deleteOwnSamples(of: ScanMapping.scanTypes, syncIdentifiers: deleted) }
        if let live = changes.liveIDs {
            let held = try await healthStore.ownSamples(of: ScanMapping.scanTypes, syncIdentifierPrefix: "nm-")
            let stale = Set(held.compactMap { sample in
                sample.syncIdentifier.flatMap { id in ScanMapping.scan(ofSyncIdentifier: id).map { live.contains($0) ? nil : id } ?? nil }
            })
            if !stale.isEmpty { try await healthStore.deleteOwnSamples(of: ScanMapping.scanTypes, syncIdentifiers: stale) }
        }
        try await next.apply(changes, saving: anchor)
    }

    /// The settings document as it changes (at launch, the copy the app
    /// holds; then each `SyncEngine` `boxSettings` event's): its `heightCm`
    /// is used for the BMI of the scans that follow, and a height that
    /// differs from this app's newest height sample is saved as a new one
    /// (sync identifier `nm-height-<updatedAt in µs>`, dated `updatedAt`).
    /// Throws when the store cannot be read or written (the phone locked):
    /// the height is taken for BMI all the same, and its sample is saved
    /// at a later call.
    public func settingsChanged(_ settings: JSONText?) async throws {
        guard let object = settings?.value.objectValue, case .number(let text)? = object["heightCm"],
            let cm = Double(text), (30...300).contains(cm)
        else { return }
        heightCm = cm
        let held = try await healthStore.ownSamples(of: [.height], syncIdentifierPrefix: "nm-height-")
        if let newest = held.max(by: { $0.start < $1.start }), abs(newest.value - cm / 100) < 0.000_5 { return }
        let micros = object["updatedAt"]?.stringValue.flatMap(Timestamp.parse)
        let date = micros.map(BoxClient.date) ?? Date()
        let id = "nm-height-\(micros ?? BoxClient.micros(date))"
        try await healthStore.save([HealthSample(type: .height, value: cm / 100, start: date, syncIdentifier: id, syncVersion: 1)])
    }
}
