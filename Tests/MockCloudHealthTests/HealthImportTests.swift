import Foundation
import MockCloudClient
import MockCloudHealth
import MockCloudTestSupport
import MockCloudWire
import Testing

/// Other sources' samples up to the box: filtered, turned into uploads,
/// enqueued, then the anchor, then HealthKit's completion.
@Suite(.timeLimit(.minutes(1))) struct HealthImportTests {
    let directory: TemporaryDirectory
    let store = FakeHealthStore()
    let engine: FakeEngine

    init() throws {
        directory = try TemporaryDirectory(prefix: "mockcloud-health")
        engine = FakeEngine(stateDirectory: directory.path)
    }

    var anchorFile: String { directory.file("health/bodyMass.anchor") }
    var anchor: String? { directory.text(of: "health/bodyMass.anchor") }

    /// A fresh importer over the same state directory: the app after a kill.
    func importer() -> HealthImport { HealthImport(healthStore: store, engine: engine, types: [.bodyMass, .bodyFatPercentage]) }

    static let date = Date(timeIntervalSince1970: 1_779_079_384.5)

    func scale(_ value: Double, version: Int64? = nil) -> HealthSample {
        HealthSample(type: .bodyMass, value: value, start: Self.date, end: Self.date.addingTimeInterval(1), syncIdentifier: version.map { _ in "scale-1" },
                     syncVersion: version, sourceBundleIdentifier: "com.withings.health", sourceName: "Withings")
    }

    var ids: Set<String> { get async { Set(await engine.queue.keys.map(\.rawValue)) } }

    @Test func aSampleBecomesHkUUIDAtItsSyncVersionOr1WithACanonicalBody() async throws {
        let plain = scale(72.4), versioned = scale(71.9, version: 4)
        await store.add(plain)
        await store.add(versioned)
        try await importer().importChanges(of: .bodyMass)
        let queue = await engine.queue
        let item = try #require(queue[MessageID("hk-" + plain.uuid.uuidString)!])
        #expect(item.change == .put(version: 1, body: try JSONText(validating:
            #"{"type":"bodyMass","value":72.4,"unit":"kg","start":"20260518T044304.500000Z","end":"20260518T044305.500000Z","source":"Withings"}"#)))
        guard case .put(let version, _)? = queue[MessageID("hk-" + versioned.uuid.uuidString)!]?.change else {
            Issue.record("the versioned sample was not queued")
            return
        }
        #expect(version == 4)
        // The same sample imported again from no anchor makes the same bytes: the box absorbs it.
        try FileManager.default.removeItem(atPath: directory.file("health"))
        try await importer().importChanges(of: .bodyMass)
        #expect(await engine.conflictingRepeats.isEmpty)
    }

    @Test func thisAppsOwnSamplesAreNotSentBackNorTheirDeletions() async throws {
        try await store.save([HealthSample(type: .bodyMass, value: 72, start: Self.date, syncIdentifier: "nm-s1-weight", syncVersion: 1)])
        let other = scale(80)
        await store.add(other)
        try await importer().importChanges(of: .bodyMass)
        #expect(await ids == ["hk-" + other.uuid.uuidString])
        // Deleted objects carry no source: this app's are known by their nm- sync identifier.
        let own = try #require(await store.samples.first { $0.syncIdentifier == "nm-s1-weight" })
        await store.remove(uuid: own.uuid)
        await store.remove(uuid: other.uuid)
        try await importer().importChanges(of: .bodyMass)
        let last = try #require(await engine.enqueued.last)
        #expect(last == [.delete(MessageID("hk-" + other.uuid.uuidString)!)])
    }

    @Test func theAnchorIsSavedAfterTheEnqueueAndBeforeHealthKitsCompletion() async throws {
        let importer = importer()
        try await importer.start()
        await store.add(scale(70))
        let anchorAtCompletion = Box<String?>(nil)
        let file = anchorFile
        await store.fire(.bodyMass) { anchorAtCompletion.value = try? String(contentsOfFile: file, encoding: .utf8) }
        #expect(anchorAtCompletion.value == "1", "the anchor was on disk when the completion handler was called")
        #expect(await engine.enqueued.count == 1)
        #expect(try !FileManager.default.contentsOfDirectory(atPath: directory.file("health")).contains { $0.hasPrefix(".") },
                "written atomically: no temporary file left")
    }

    @Test func aKillBeforeTheEnqueueLosesNothing() async throws {
        await store.add(scale(70))
        await engine.setKill(.before)
        await #expect(throws: Injected.self) { try await importer().importChanges(of: .bodyMass) }
        #expect(anchor == nil, "the anchor does not move past what is not queued")
        try await importer().importChanges(of: .bodyMass)
        #expect(await engine.queue.count == 1)
    }

    @Test func aKillAfterTheEnqueueBeforeTheAnchorSendsTheSameItemsAgainAndNothingElse() async throws {
        await store.add(scale(70))
        await store.add(scale(71, version: 2))
        await engine.setKill(.after)
        await #expect(throws: Injected.self) { try await importer().importChanges(of: .bodyMass) }
        #expect(anchor == nil)
        try await importer().importChanges(of: .bodyMass)
        #expect(await engine.enqueued.count == 2)
        #expect(await engine.queue.count == 2)
        #expect(await engine.conflictingRepeats.isEmpty, "the same id, version and body: absorbed by the queue and by the box")
        #expect(anchor == "2")
    }

    @Test func aKillAfterTheAnchorBeforeTheCompletionSendsNothingAgain() async throws {
        await store.add(scale(70))
        try await importer().importChanges(of: .bodyMass)  // enqueued and anchored; the completion never came
        let fresh = importer()
        try await fresh.start()
        await store.fire(.bodyMass)  // HealthKit delivers the update again
        #expect(await engine.enqueued.count == 1)
    }

    @Test func theCompletionHandlerIsCalledOnEveryPath() async throws {
        let importer = importer()
        try await importer.start()
        await store.add(scale(70))
        let completions = Box(0)
        await engine.setKill(.before)
        await store.fire(.bodyMass) { completions.value += 1 }  // the engine cannot write its state
        await store.setLocked(true)
        await store.fire(.bodyMass) { completions.value += 1 }  // the query fails: locked
        await store.fire(.bodyMass, error: Injected(what: "observer query failed")) { completions.value += 1 }
        await store.setLocked(false)
        await store.fire(.bodyMass) { completions.value += 1 }  // the import succeeds
        #expect(completions.value == 4)
        #expect(await engine.queue.count == 1)
    }

    @Test func aLockedPhonesQueryFailureKeepsTheAnchorAndIsRetriedAtUnlock() async throws {
        await store.add(scale(70))
        let importer = importer()
        try await importer.importChanges(of: .bodyMass)
        await store.add(scale(71))
        await store.setLocked(true)
        await #expect(throws: Injected.self) { try await importer.importChanges(of: .bodyMass) }
        #expect(anchor == "1", "the anchor did not move")
        await store.setLocked(false)
        await importer.retryFailed()  // the phone unlocked
        #expect(await engine.queue.count == 2)
        #expect(anchor == "2")
    }

    @Test func startAsksForBackgroundDeliveryImmediateForBodyMassHourlyForTheRest() async throws {
        try await importer().start()
        #expect(await store.deliveries == [.bodyMass: .immediate, .bodyFatPercentage: .hourly])
        #expect(await store.observed == [.bodyMass, .bodyFatPercentage])
    }

    @Test func aFirstImportOf10000SamplesIsReadInPagesOfAtMost1000() async throws {
        for index in 0..<10_000 { await store.add(scale(60 + Double(index) / 1000)) }
        let queued = try await importer().importChanges(of: .bodyMass)
        #expect(queued == 10_000)
        #expect(await engine.enqueued.allSatisfy { $0.count <= HealthImport.pageSize })
        #expect(await engine.queue.count == 10_000)
        #expect(await store.queries == 11, "ten full pages, then one that says there is no more")
        #expect(anchor == "10000")
    }

    @Test func aKillInTheMiddleOfTheFirstImportResumesFromTheLastPageQueued() async throws {
        for index in 0..<2_500 { await store.add(scale(60 + Double(index) / 1000)) }
        let first = importer()
        await engine.setKill(.after)
        await #expect(throws: Injected.self) { try await first.importChanges(of: .bodyMass) }  // page 1 queued, then killed
        #expect(anchor == nil)
        try await importer().importChanges(of: .bodyMass)
        #expect(await engine.queue.count == 2_500)
        #expect(await engine.conflictingRepeats.isEmpty)
        #expect(await engine.enqueued.map(\.count) == [1_000, 1_000, 1_000, 500], "only the page killed after its enqueue came twice")
    }
}

/// A value a completion handler sets, read after it ran.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
