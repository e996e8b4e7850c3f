import Foundation
import MockCloudClient
import MockCloudHealth
import MockCloudJSON
import MockCloudWire
import Testing

/// The feed into HealthKit: each page saved, its deletions made, then forwarded.
@Suite struct HealthKitScansTests {
    static let summary = #"{"scanId": "s1", "measuredAt": "2026-05-18T04:43:04Z", "weightKg": 72.4, "bodyFatPercent": 18.5}"#
    static let withRings =
        #"{"scanId": "s1", "measuredAt": "2026-05-18T04:43:04Z", "weightKg": 72.3, "bodyFatPercent": 18.5, "circumferencesCm": {"waist": 81.2}}"#
    static let settings = #"{"heightCm": 178, "updatedAt": "2026-05-01T10:00:00Z"}"#

    func scans(_ store: FakeHealthStore, _ next: ForwardedStore) async throws -> HealthKitScans {
        let scans = HealthKitScans(healthStore: store, forwardingTo: next)
        try await scans.settingsChanged(JSONText(validating: Self.settings))
        return scans
    }

    @Test func aPageIsSavedThenItsDeletionsMadeThenForwardedWithItsAnchor() async throws {
        let journal = CallJournal()
        let store = FakeHealthStore(journal: journal), next = ForwardedStore(journal: journal)
        let scans = try await scans(store, next)
        await journal.clear()
        try await scans.apply(try page([("s2", 1, Self.summary)], deleted: ["s1"], anchor: 7), saving: Anchor("00000000000000a1.0.7"))
        #expect(await journal.entries == [
            "save 4",
            "delete nm-s1-bmi,nm-s1-bodyFat,nm-s1-leanMass,nm-s1-waist,nm-s1-weight",
            "forward",
        ])
        #expect(await next.anchor == Anchor("00000000000000a1.0.7"))
        #expect(try await scans.savedAnchor() == Anchor("00000000000000a1.0.7"))
    }

    @Test func aScanThatGrowsReplacesItsSamplesInPlaceByVersion() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        try await scans.apply(try page([("s1", 1, Self.summary)], anchor: 1), saving: nil)
        #expect(await store.own["nm-s1-weight"]?.value == 72.4)
        #expect(await store.own["nm-s1-waist"] == nil)
        try await scans.apply(try page([("s1", 2, Self.withRings)], anchor: 2), saving: nil)
        let own = await store.own
        #expect(own["nm-s1-weight"]?.value == 72.3 && own["nm-s1-weight"]?.version == 2, "replaced, not added beside")
        #expect(own["nm-s1-waist"]?.value == 0.812 && own["nm-s1-waist"]?.version == 2)
        #expect(await store.samples.filter { $0.syncIdentifier == "nm-s1-weight" }.count == 1)
        // The older version again (a replayed page) changes nothing.
        try await scans.apply(try page([("s1", 1, Self.summary)], anchor: 1), saving: nil)
        #expect(await store.own["nm-s1-weight"]?.value == 72.3)
    }

    @Test func aDeletedScanDeletesThisAppsSamplesOnlyNeverAnotherSources() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        try await scans.apply(try page([("s1", 1, Self.summary), ("s2", 1, Self.summary)], anchor: 2), saving: nil)
        // Another app that happens to write the same sync identifier.
        await store.add(HealthSample(type: .bodyMass, value: 90, start: Date(), syncIdentifier: "nm-s1-weight", syncVersion: 1,
                                     sourceBundleIdentifier: "com.other.scale", sourceName: "Scale"))
        try await scans.apply(try page([], deleted: ["s1"], anchor: 3), saving: nil)
        let remaining = await store.samples
        #expect(!remaining.contains { $0.sourceBundleIdentifier == store.ownBundleIdentifier && $0.syncIdentifier?.hasPrefix("nm-s1-") == true })
        #expect(remaining.contains { $0.sourceBundleIdentifier == "com.other.scale" && $0.value == 90 })
        #expect(await store.own.keys.filter { $0.hasPrefix("nm-s2-") }.count == 4)
    }

    @Test func after410TheFullReadRemovesOnlyThisAppsScanSamplesTheBoxNoLongerHolds() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        try await scans.apply(try page([("s1", 1, Self.summary), ("s2", 1, Self.summary), ("s3", 1, Self.summary)], anchor: 3), saving: nil)
        await store.add(HealthSample(type: .bodyMass, value: 90, start: Date(), syncIdentifier: "nm-s2-weight", syncVersion: 1,
                                     sourceBundleIdentifier: "com.other.scale", sourceName: "Scale"))
        await store.add(HealthSample(type: .bodyMass, value: 70, start: Date(), sourceBundleIdentifier: "com.other.scale"))
        // The box was restored from a backup that holds s1 only: the full read's pages, its last with the live ids.
        try await scans.apply(try page([("s1", 1, Self.summary)], anchor: 1, fullRead: true, hasMore: true, startsResync: true), saving: nil)
        #expect(await store.own.keys.contains("nm-s3-weight"), "nothing is removed before the full read's last page")
        try await scans.apply(try page([], anchor: 1, fullRead: true, liveIDs: ["s1"]), saving: Anchor("00000000000000a1.0.1"))
        let own = await store.own
        #expect(own.keys.filter { $0.hasPrefix("nm-s1-") }.count == 4)
        #expect(!own.keys.contains { $0.hasPrefix("nm-s2-") || $0.hasPrefix("nm-s3-") })
        #expect(own.keys.contains { $0.hasPrefix("nm-height-") }, "the height from the settings is not a scan's")
        let others = await store.samples.filter { $0.sourceBundleIdentifier == "com.other.scale" }
        #expect(others.count == 2, "other sources' samples stay, even one named like a scan's")
        #expect(await next.anchor == Anchor("00000000000000a1.0.1"))
    }

    @Test func aFailedSaveFailsThePageWhichIsNotForwardedAndLaterSucceeds() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        await store.setFailSaves(true)
        let first = try page([("s1", 1, Self.summary)], anchor: 5)
        await #expect(throws: Injected.self) { try await scans.apply(first, saving: Anchor("00000000000000a1.0.5")) }
        #expect(await next.pages == 0)
        #expect(await next.anchor == nil, "the anchor is not saved: the page is read again, never skipped")
        await store.setFailSaves(false)
        try await scans.apply(first, saving: Anchor("00000000000000a1.0.5"))
        #expect(await store.own["nm-s1-weight"] != nil)
        #expect(await next.anchor == Anchor("00000000000000a1.0.5"))
    }

    @Test func aLockedPhoneFailsTheRebuildsQueryAndTheAnchorStays() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        await store.setLocked(true)
        let last = try page([], anchor: 1, fullRead: true, liveIDs: [])
        await #expect(throws: Injected.self) { try await scans.apply(last, saving: Anchor("00000000000000a1.0.1")) }
        #expect(await next.anchor == nil)
    }

    @Test func aCrashBetweenStepsReplaysThePageAndTheReplayChangesNothing() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        let grown = try page([("s1", 2, Self.withRings)], deleted: ["s0"], anchor: 9)
        await next.setFailNext()  // saved and deleted, then killed before the app's store took it
        await #expect(throws: Injected.self) { try await scans.apply(grown, saving: Anchor("00000000000000a1.0.9")) }
        let before = await store.samples
        try await scans.apply(grown, saving: Anchor("00000000000000a1.0.9"))
        #expect(await store.samples == before, "the same sync identifiers and versions: nothing saved twice")
        #expect(await next.anchor == Anchor("00000000000000a1.0.9"))
    }

    @Test func theHeightIsSavedWhenItChangesAndUsedForBMI() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = try await scans(store, next)
        try await scans.settingsChanged(JSONText(validating: #"{"heightCm": 178, "unitSystem": "imperial", "updatedAt": "2026-05-02T10:00:00Z"}"#))
        var heights = await store.samples.filter { $0.type == .height }
        #expect(heights.count == 1 && heights[0].value == 1.78, "another member's edit writes no second height")
        try await scans.settingsChanged(JSONText(validating: #"{"heightCm": 180, "updatedAt": "2026-05-03T10:00:00Z"}"#))
        heights = await store.samples.filter { $0.type == .height }
        #expect(heights.map(\.value).sorted() == [1.78, 1.80])
        try await scans.apply(try page([("s1", 1, Self.summary)], anchor: 1), saving: nil)
        let bmi = try #require(await store.own["nm-s1-bmi"])
        #expect(abs(bmi.value - 72.4 / (1.8 * 1.8)) < 1e-9)
    }

    @Test func whileLockedTheHeightIsTakenForBMIAndItsSampleWaits() async throws {
        let store = FakeHealthStore(), next = ForwardedStore()
        let scans = HealthKitScans(healthStore: store, forwardingTo: next)
        await store.setLocked(true)
        await #expect(throws: Injected.self) { try await scans.settingsChanged(JSONText(validating: Self.settings)) }
        try await scans.apply(try page([("s1", 1, Self.summary)], anchor: 1), saving: nil)  // saves work while locked
        #expect(await store.own["nm-s1-bmi"] != nil)
        #expect(await store.samples.filter { $0.type == .height }.isEmpty)
        await store.setLocked(false)
        try await scans.settingsChanged(JSONText(validating: Self.settings))
        #expect(await store.samples.filter { $0.type == .height }.count == 1)
    }
}
