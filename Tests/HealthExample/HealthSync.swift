import Foundation
import MockCloudClient
import MockCloudHealth
#if canImport(HealthKit)
import HealthKit
#endif

/// The app's sync with the box and with HealthKit, set up once at launch
/// (before `application(_:didFinishLaunchingWithOptions:)` returns).
final class HealthSync: Sendable {
    let engine: SyncEngine
    let scans: HealthKitScans
    let importer: HealthImport
    let lifecycle: SyncLifecycle

    init(client: BoxClient, stateDirectory: URL, health: some HealthStore, appStore: some ChangeApplier) throws {
        scans = HealthKitScans(healthStore: health, forwardingTo: appStore)  // the mirror's scans into HealthKit, then the app's store
        engine = try SyncEngine(client: client, stateDirectory: stateDirectory, store: scans)
        importer = HealthImport(healthStore: health, engine: engine, types: [.bodyMass, .bodyFatPercentage, .waistCircumference])
        lifecycle = SyncLifecycle(engine: engine)
        lifecycle.registerBackgroundRefresh(identifier: "com.example.mirror.sync")  // in BGTaskSchedulerPermittedIdentifiers
        lifecycle.start()  // the network path and the foreground
    }

    #if canImport(HealthKit)
    /// On the phone: HealthKit's store (authorized by the app before `run`).
    convenience init(client: BoxClient, stateDirectory: URL, appStore: some ChangeApplier) throws {
        try self.init(client: client, stateDirectory: stateDirectory, health: HealthKitStore(HKHealthStore()), appStore: appStore)
    }
    #endif

    /// For as long as the app runs; `settings`: the copy the app holds.
    func run(settings: JSONText?) async throws {
        try? await scans.settingsChanged(settings)  // the height, for BMI (while locked, its sample waits for the next change)
        try await importer.start()  // observer queries and background delivery, from the kept anchors
        async let running: Void = engine.run()
        for await event in engine.events where event.kind == .boxSettings {
            try? await scans.settingsChanged(event.settings?.document)  // a new height
        }
        try await running
    }
}
