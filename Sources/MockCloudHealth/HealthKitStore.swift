#if canImport(HealthKit)
import Foundation
import HealthKit
import MockCloudClient

/// `HKHealthStore` as the library's `HealthStore`: the only file that
/// speaks HealthKit. Values are converted at this edge (`HealthType.unit`:
/// kg, the 0–1 fraction of `%`, m, count); sync metadata is
/// `HKMetadataKeySyncIdentifier` / `HKMetadataKeySyncVersion`; anchors are
/// `HKQueryAnchor`s archived with secure coding.
public struct HealthKitStore: HealthStore, @unchecked Sendable {
    /// Apple documents `HKHealthStore` as safe to use from any thread.
    public let store: HKHealthStore
    public let ownBundleIdentifier: String

    public init(_ store: HKHealthStore, ownBundleIdentifier: String = Bundle.main.bundleIdentifier ?? "") {
        self.store = store
        self.ownBundleIdentifier = ownBundleIdentifier
    }

    static func quantityType(_ type: HealthType) -> HKQuantityType {
        HKQuantityType(HKQuantityTypeIdentifier(rawValue: type.identifier))
    }

    public func save(_ samples: [HealthSample]) async throws {
        let objects = samples.map { sample -> HKQuantitySample in
            var metadata: [String: Any] = [:]
            if let id = sample.syncIdentifier {
                metadata[HKMetadataKeySyncIdentifier] = id
                metadata[HKMetadataKeySyncVersion] = NSNumber(value: sample.syncVersion ?? 1)
            }
            return HKQuantitySample(
                type: Self.quantityType(sample.type), quantity: HKQuantity(unit: HKUnit(from: sample.type.unit), doubleValue: sample.value),
                start: sample.start, end: sample.end, metadata: metadata)
        }
        // The completion form: the async one is imported from Objective-C
        // and crashes this toolchain's cross-compiler for iOS.
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            store.save(objects, withCompletion: Self.resuming(done))
        }
    }

    public func deleteOwnSamples(of types: [HealthType], syncIdentifiers: Set<String>) async throws {
        let predicate = NSCompoundPredicate(andPredicateWithSubpredicates: [
            HKQuery.predicateForObjects(from: HKSource.default()),
            HKQuery.predicateForObjects(withMetadataKey: HKMetadataKeySyncIdentifier, allowedValues: Array(syncIdentifiers)),
        ])
        for type in types {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                store.deleteObjects(of: Self.quantityType(type), predicate: predicate) { _, _, error in
                    if let error { done.resume(throwing: error) } else { done.resume() }
                }
            }
        }
    }

    public func ownSamples(of types: [HealthType], syncIdentifierPrefix prefix: String) async throws -> [HealthSample] {
        let predicate = NSCompoundPredicate(andPredicateWithSubpredicates: [
            HKQuery.predicateForObjects(from: HKSource.default()),
            HKQuery.predicateForObjects(withMetadataKey: HKMetadataKeySyncIdentifier),
        ])
        var found: [HealthSample] = []
        for type in types {
            let samples = try await withCheckedThrowingContinuation { (done: CheckedContinuation<[HealthSample], any Error>) in
                let query = HKSampleQuery(sampleType: Self.quantityType(type), predicate: predicate, limit: HKObjectQueryNoLimit, sortDescriptors: nil) {
                    _, samples, error in
                    if let error { return done.resume(throwing: error) }
                    done.resume(returning: (samples ?? []).compactMap { Self.sample($0, type) })
                }
                store.execute(query)
            }
            found += samples.filter { $0.syncIdentifier?.hasPrefix(prefix) ?? false }
        }
        return found
    }

    public func changes(of type: HealthType, after anchor: [UInt8]?, limit: Int) async throws -> HealthChanges {
        let from = try anchor.flatMap { try NSKeyedUnarchiver.unarchivedObject(ofClass: HKQueryAnchor.self, from: Data($0)) }
        return try await withCheckedThrowingContinuation { (done: CheckedContinuation<HealthChanges, any Error>) in
            let query = HKAnchoredObjectQuery(type: Self.quantityType(type), predicate: nil, anchor: from, limit: limit) {
                _, samples, deleted, next, error in
                if let error { return done.resume(throwing: error) }
                do {
                    let bytes = try next.map { [UInt8](try NSKeyedArchiver.archivedData(withRootObject: $0, requiringSecureCoding: true)) } ?? anchor ?? []
                    done.resume(returning: HealthChanges(
                        added: (samples ?? []).compactMap { Self.sample($0, type) },
                        deleted: (deleted ?? []).map {
                            DeletedHealthSample(uuid: $0.uuid, syncIdentifier: $0.metadata?[HKMetadataKeySyncIdentifier] as? String)
                        },
                        anchor: bytes))
                } catch {
                    done.resume(throwing: error)
                }
            }
            store.execute(query)
        }
    }

    public func enableBackgroundDelivery(for type: HealthType, frequency: HealthDeliveryFrequency) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            store.enableBackgroundDelivery(
                for: Self.quantityType(type), frequency: frequency == .immediate ? .immediate : .hourly, withCompletion: Self.resuming(done))
        }
    }

    public func observe(_ type: HealthType, onUpdate: @escaping @Sendable (_ error: (any Error)?, _ done: @escaping @Sendable () -> Void) -> Void) {
        let query = HKObserverQuery(sampleType: Self.quantityType(type), predicate: nil) { _, completion, error in
            let handler = CompletionHandler(completion)
            onUpdate(error) { handler.call() }
        }
        store.execute(query)
    }

    /// HealthKit's `(success, error)` completion, resuming `done`.
    static func resuming(_ done: CheckedContinuation<Void, any Error>) -> @Sendable (Bool, (any Error)?) -> Void {
        { _, error in
            if let error { done.resume(throwing: error) } else { done.resume() }
        }
    }

    /// A HealthKit quantity sample as the library's, its value in `type.unit`.
    static func sample(_ object: HKSample, _ type: HealthType) -> HealthSample? {
        guard let sample = object as? HKQuantitySample else { return nil }
        let source = sample.sourceRevision.source
        return HealthSample(
            uuid: sample.uuid, type: type, value: sample.quantity.doubleValue(for: HKUnit(from: type.unit)),
            start: sample.startDate, end: sample.endDate,
            syncIdentifier: sample.metadata?[HKMetadataKeySyncIdentifier] as? String,
            syncVersion: (sample.metadata?[HKMetadataKeySyncVersion] as? NSNumber)?.int64Value,
            sourceBundleIdentifier: source.bundleIdentifier, sourceName: source.name)
    }
}

/// HealthKit's observer completion handler, which it lets be called from any thread.
struct CompletionHandler: @unchecked Sendable {
    let call: () -> Void
    init(_ call: @escaping () -> Void) { self.call = call }
}

extension HealthKitScans {
    /// The mirror's scans into `healthStore`, then on to `next`.
    public init(healthStore: HKHealthStore, forwardingTo next: some ChangeApplier, mapping: ScanMapping = .mirror) {
        self.init(healthStore: HealthKitStore(healthStore), forwardingTo: next, mapping: mapping)
    }
}

extension HealthImport {
    /// `types` of every source but this app, from `healthStore` to `engine`.
    public init(healthStore: HKHealthStore, engine: some SyncEngineLink, types: [HealthType]) {
        self.init(healthStore: HealthKitStore(healthStore), engine: engine, types: types)
    }
}
#endif
