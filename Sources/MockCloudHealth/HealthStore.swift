import Foundation

/// A quantity sample as this library sees HealthKit's: the type, the value
/// in the type's unit (`HealthType.unit`), the dates, the sync metadata
/// (`HKMetadataKeySyncIdentifier` / `HKMetadataKeySyncVersion`) and the source.
public struct HealthSample: Sendable, Equatable {
    /// HealthKit's UUID of the sample (a new one for a sample to save).
    public var uuid: UUID
    public var type: HealthType
    /// In `type.unit`: kg, a 0–1 fraction, m, count.
    public var value: Double
    public var start: Date
    public var end: Date
    public var syncIdentifier: String?
    public var syncVersion: Int64?
    /// The bundle identifier of the app that saved it.
    public var sourceBundleIdentifier: String
    /// The name of that app, as Health shows it.
    public var sourceName: String

    public init(
        uuid: UUID = UUID(), type: HealthType, value: Double, start: Date, end: Date? = nil,
        syncIdentifier: String? = nil, syncVersion: Int64? = nil, sourceBundleIdentifier: String = "", sourceName: String = ""
    ) {
        self.uuid = uuid
        self.type = type
        self.value = value
        self.start = start
        self.end = end ?? start
        self.syncIdentifier = syncIdentifier
        self.syncVersion = syncVersion
        self.sourceBundleIdentifier = sourceBundleIdentifier
        self.sourceName = sourceName
    }
}

/// A deleted sample as HealthKit reports it (`HKDeletedObject`): its UUID
/// and its sync metadata, nothing else (no source, no value).
public struct DeletedHealthSample: Sendable, Equatable {
    public var uuid: UUID
    public var syncIdentifier: String?

    public init(uuid: UUID, syncIdentifier: String? = nil) {
        self.uuid = uuid
        self.syncIdentifier = syncIdentifier
    }
}

/// One answer of an anchored query: what changed after the anchor given,
/// at most the limit asked, and the anchor after it (HealthKit's
/// `HKQueryAnchor`, archived: opaque bytes kept as they are).
public struct HealthChanges: Sendable, Equatable {
    public var added: [HealthSample]
    public var deleted: [DeletedHealthSample]
    public var anchor: [UInt8]

    public init(added: [HealthSample], deleted: [DeletedHealthSample], anchor: [UInt8]) {
        self.added = added
        self.deleted = deleted
        self.anchor = anchor
    }
}

/// How soon HealthKit wakes the app for new samples of a type
/// (`HKUpdateFrequency`).
public struct HealthDeliveryFrequency: Sendable, Hashable {
    let name: String
    public static let immediate = HealthDeliveryFrequency(name: "immediate")
    public static let hourly = HealthDeliveryFrequency(name: "hourly")
}

/// The health store operations this library uses: the seam between its
/// portable core and HealthKit. `HKHealthStore`'s adapter (iOS) conforms,
/// and so does a fake in the tests. Every operation that throws leaves
/// nothing half done that the next attempt would not redo.
public protocol HealthStore: Sendable {
    /// This app's bundle identifier: the source of the samples it saves.
    var ownBundleIdentifier: String { get }

    /// Saves `samples` with their sync metadata. A sample whose sync
    /// identifier this app's source already holds replaces it only when its
    /// version is greater; otherwise the held one stays (HealthKit's rule).
    /// Throws when the store cannot be written (the phone locked and the
    /// store protected, permission refused): nothing of the call is saved.
    func save(_ samples: [HealthSample]) async throws

    /// Deletes this app's samples of `types` whose sync identifier is one
    /// of `syncIdentifiers`; other sources' samples are never touched.
    func deleteOwnSamples(of types: [HealthType], syncIdentifiers: Set<String>) async throws

    /// This app's samples of `types` whose sync identifier starts with `prefix`.
    func ownSamples(of types: [HealthType], syncIdentifierPrefix prefix: String) async throws -> [HealthSample]

    /// The changes to `type`'s samples after `anchor` (nil: from the
    /// beginning), at most `limit` added and deleted together, every
    /// source's. Throws while the phone is locked (the store is then
    /// protected) or without permission.
    func changes(of type: HealthType, after anchor: [UInt8]?, limit: Int) async throws -> HealthChanges

    /// Asks HealthKit to wake the app for new samples of `type`.
    func enableBackgroundDelivery(for type: HealthType, frequency: HealthDeliveryFrequency) async throws

    /// Starts an observer query on `type`: `onUpdate` is called for each
    /// change HealthKit reports (with the error, if the query failed), and
    /// must call `done` once it has handled it, on every path.
    func observe(_ type: HealthType, onUpdate: @escaping @Sendable (_ error: (any Error)?, _ done: @escaping @Sendable () -> Void) -> Void)
}
