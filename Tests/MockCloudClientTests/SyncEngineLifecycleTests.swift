import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudTestSupport
import Testing

/// The engine as an app's lifecycle meets it: close and reopen, a
/// background task's deadline, the network hint, another network's
/// certificate, the end of a run, and the failures that must not hold up
/// the rest (docs/SYNC.md, "The engine's lifecycle").
@Suite struct SyncEngineLifecycleTests {
    func engine(_ box: FakeBox, _ directory: TemporaryDirectory, waits: Waits = Waits(), actually: Duration = .zero) throws -> SyncEngine {
        try SyncEngine(
            client: engineClient(box, waits: waits, actually: actually), stateDirectory: URL(fileURLWithPath: directory.path),
            store: AppStore(anchor: nil))
    }

    @Test func closeStopsTheRunWaitsForItsTransfersAndLetsTheDirectoryGoAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: FakeBox.held)
        let first = try engine(box, directory)
        try await first.enqueue([.put(id("a"), body: body("{}"))])
        let running = Task { try await first.run() }
        while await box.sentItems.isEmpty { await Task.yield() }
        await first.close()
        #expect(await box.inFlight == 0)  // the held bulk request and the waits were cancelled, and ended
        await #expect(throws: CancellationError.self) { try await running.value }
        var ended = true
        for await _ in first.events { ended = true }  // finished: the loop ends
        #expect(ended)
        // The old engine is still referenced, yet its directory is free.
        let second = try await SyncEngine.open(
            client: engineClient(FakeBox()), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        #expect(try await second.pending.uploads.map(\.id) == [id("a")])
        await #expect(throws: ClientError.self) { try await first.enqueue([.put(id("b"), body: body("{}"))]) }
        await second.close()
    }

    @Test func syncUntilIdleSendsWhatIsPendingAndReadsTheFeedThenReturns() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(feed: page([envelope("m1", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
        let store = AppStore(anchor: nil)
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: store)
        try await engine.enqueue([.put(id("a"), body: body("{}")), .put(id("b"), body: body("{}"))])
        try await engine.editSettings(body(#"{"unitSystem": "metric"}"#), at: Date(timeIntervalSince1970: 1_779_098_400))
        let left = try await engine.syncUntilIdle(within: .seconds(60))
        #expect(left.isEmpty)
        #expect(await box.sentItems == [["a v0", "b v0"]])
        #expect(await box.merges.count == 1)
        #expect(await store.held == [id("m1"): 1])
        #expect(await box.inFlight == 0)  // its follows' waits were cancelled on the way out
    }

    @Test func syncUntilIdleWithTheBoxAwayReturnsAtItsDeadlineWithEverythingPending() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { _, _ in .failure(.connection("Connection refused")) })
        let engine = try engine(box, directory, actually: .milliseconds(5))
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let left = try await engine.syncUntilIdle(within: .milliseconds(300))
        #expect(left.uploads.map(\.id) == [id("a")])
        #expect(await box.sentItems.count >= 1)
        #expect(await box.inFlight == 0)
    }

    @Test func syncUntilIdlePastItsDeadlineCancelsTheRequestInFlightAndKeepsItPending() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: FakeBox.held)
        let engine = try engine(box, directory)
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let left = try await engine.syncUntilIdle(within: .milliseconds(300))
        #expect(left.uploads.map(\.id) == [id("a")])
        #expect(await box.inFlight == 0)
        #expect(await box.cancelled >= 1)
    }

    @Test func withoutTheNetworkNothingIsTriedAndItsReturnTriesAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox()
        let engine = try engine(box, directory, actually: .seconds(3600))
        await engine.networkChanged(available: false)
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        #expect(try await engine.syncUntilIdle(within: .seconds(60)).uploads.map(\.id) == [id("a")])  // at once, untried
        let seen = await whileRunning(engine) { () async -> [SyncEngine.Event] in
            try? await Task.sleep(for: .milliseconds(300))
            #expect(await box.requests.isEmpty)
            await engine.networkChanged(available: true)
            return await events(of: engine) { $0.contains { $0.kind == .uploaded } }
        }
        #expect(seen.contains { $0.kind == .uploaded })
        #expect(await box.sentItems == [["a v0"]])
    }

    @Test func anotherNetworksCertificateIsTheBoxAwayNotTheEndOfTheRun() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in
            n <= 3 ? .failure(.untrusted("certificate signed by an unknown authority")) : FakeServer.storeAll(request)
        })
        let engine = try engine(box, directory)
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let seen = await whileRunning(engine) { await events(of: engine) { $0.contains { $0.kind == .uploaded } } }
        let lost = seen.filter { $0.kind == .unreachable }
        #expect(lost.count == 3 && lost.allSatisfy { $0.error?.code == .untrusted && $0.retryIn != nil })
        #expect(seen.map(\.kind).suffix(2) == [.reachable, .uploaded])
    }

    @Test func aRunThatEndsWithAnErrorSaysSoAsItsLastEventAndEventsFinish() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { _, _ in FakeServer.json(401, #"{"error": "a bearer token is required"}"#) })
        let engine = try engine(box, directory)
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let reader = Task { () -> [SyncEngine.Event] in
            var seen: [SyncEngine.Event] = []
            for await event in engine.events { seen.append(event) }
            return seen
        }
        await #expect(throws: ClientError.refused(status: 401, error: "a bearer token is required")) { try await engine.run() }
        let seen = await reader.value  // returns: the stream finished
        #expect(seen.last == .stopped(.refused(status: 401, error: "a bearer token is required")))
        #expect(try await engine.pending.uploads.map(\.id) == [id("a")])
    }

    @Test(arguments: [
        FakeServer.json(500, #"{"error": "the stored settings are not valid JSON", "changed": "no"}"#),
        FakeServer.json(200, #"{"unitSystem": "metric"}"#),  // a box without the per-field merge
    ])
    func aSettingsEditTheBoxCannotMergeHoldsUpNoUpload(answer: Result<TransportResponse, TransportError>) async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(merge: { _, _ in answer })
        let engine = try engine(box, directory)
        try await engine.editSettings(body(#"{"unitSystem": "metric"}"#), at: Date(timeIntervalSince1970: 1_779_098_400))
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let seen = await whileRunning(engine) {
            await events(of: engine) { seen in
                seen.contains { $0.kind == .uploaded } && seen.contains { $0.kind == .deferred && $0.members == ["unitSystem"] }
            }
        }
        #expect(!seen.contains { $0.kind == .unreachable || $0.kind == .stopped })
        let pending = try await engine.pending
        #expect(pending.uploads.isEmpty && pending.settingsMembers.keys.sorted() == ["unitSystem"])
    }

    @Test func whatTheBoxDefersBacksOffUpToTenMinutes() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { _, _ in
            FakeServer.json(200, #"{"results": [{"id": "d", "status": 507, "error": "the key holds 100000 messages", "changed": "no"}]}"#)
        })
        let engine = try engine(box, directory)
        try await engine.enqueue([.put(id("d"), body: body("{}"))])
        let seen = await whileRunning(engine) { await events(of: engine) { $0.filter { $0.kind == .deferred }.count == 16 } }
        let waits = seen.filter { $0.kind == .deferred }.compactMap(\.retryIn)
        #expect(waits.first! <= .milliseconds(100) && waits.allSatisfy { $0 <= .seconds(600) })
        #expect(waits.suffix(2).allSatisfy { $0 >= .seconds(300) })  // 100 ms doubled 13 times is past 600 s: capped, jittered by half
        #expect(!seen.contains { $0.kind == .unreachable })
    }

    @Test func aTooManyRequestsPastItsRetryAfterIsADeferralNotTheBoxAway() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in
            n <= 2 ? FakeServer.json(429, #"{"error": "this address has had its share"}"#, headers: [("retry-after", "3600")])
                : FakeServer.storeAll(request)
        })
        let engine = try engine(box, directory)
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let seen = await whileRunning(engine) { await events(of: engine) { $0.contains { $0.kind == .uploaded } } }
        let deferred = seen.first { $0.kind == .deferred }
        #expect(deferred?.ids == [id("a")] && deferred?.error?.status == 429)
        #expect(!seen.contains { $0.kind == .unreachable })
    }

    @Test func aNewChangeEndsADeferralsWaitAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in
            guard n == 1 else { return FakeServer.storeAll(request) }
            return FakeServer.json(200, #"{"results": [{"id": "d", "status": 507, "error": "the disk is full", "changed": "no"}]}"#)
        })
        let engine = try engine(box, directory, actually: .seconds(3600))  // every wait a real hour
        try await engine.enqueue([.put(id("d"), body: body("{}"))])
        let seen = try await whileRunning(engine) { () async throws -> [SyncEngine.Event] in
            _ = await events(of: engine) { $0.contains { $0.kind == .deferred } }
            try await engine.enqueue([.put(id("e"), body: body("{}"))])
            return await events(of: engine) { $0.contains { $0.kind == .uploaded } }
        }
        #expect(seen.first { $0.kind == .uploaded }?.ids == [id("d"), id("e")])
        #expect(await box.sentItems == [["d v0"], ["d v0", "e v0"]])
    }

    @Test func anEditOlderThanTheOneQueuedIsRefusedNotDroppedInSilence() async throws {
        let directory = try TemporaryDirectory()
        let engine = try engine(FakeBox(), directory)
        let t0 = Date(timeIntervalSince1970: 1_779_098_400)
        try await engine.editSettings(body(#"{"unitSystem": "imperial"}"#), at: t0 + 60)
        let reader = Task { await events(of: engine) { $0.contains { $0.kind == .settingsRefused } } }
        try await engine.editSettings(body(#"{"unitSystem": "metric", "heightCm": 180}"#), at: t0)
        let refused = await reader.value.first { $0.kind == .settingsRefused }
        #expect(refused?.members == ["unitSystem"] && refused?.error?.status == 409)
        #expect(try await engine.pending.settingsMembers == ["unitSystem": t0 + 60, "heightCm": t0])
    }

    @Test func theSettingsToShowAreTheBoxsWithTheUnsentEditsOverThem() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(settings: #"{"unitSystem": "metric", "heightCm": 175, "goalKg": 70}"#)
        let engine = try engine(box, directory)
        let t0 = Date(timeIntervalSince1970: 1_779_098_400)
        try await engine.editSettings(body(#"{"heightCm": 180, "goalKg": null, "theme": "dark"}"#), at: t0)
        #expect(try await engine.settingsToShow() == body(#"{"unitSystem": "metric", "heightCm": 180, "theme": "dark"}"#))
    }

    @Test func aRefusalIsKeptAcrossARestartUntilTheAppTakesIt() async throws {
        let directory = try TemporaryDirectory()
        let state = URL(fileURLWithPath: directory.path)
        let box = FakeBox(
            bulk: { _, _ in
                FakeServer.json(200, #"{"results": [{"id": "a", "status": 409, "error": "older", "current": \#(envelope("a", version: 7, seq: 3))}, "#
                    + #"{"id": "b", "status": 400, "error": "invalid body"}]}"#)
            },
            merge: { _, _ in FakeServer.json(413, #"{"error": "request body too large"}"#) })
        let t0 = Date(timeIntervalSince1970: 1_779_098_400)
        do {
            let engine = try engine(box, directory)
            try await engine.enqueue([.put(id("a"), version: 1, body: body("{}")), .put(id("b"), version: 1, body: body("{}"))])
            try await engine.enqueue([.put(id("a"), version: 0, body: body("{}"))])  // older than the one queued: refused at once
            try await engine.editSettings(body(#"{"notes": "long"}"#), at: t0)
            _ = await whileRunning(engine) {
                await events(of: engine) { seen in
                    seen.filter { $0.kind == .refused }.count == 2 && seen.contains { $0.kind == .settingsRefused }
                }
            }
            await engine.close()  // the events read, but the refusals never taken
        }
        let reopened = try engine(FakeBox(), directory)
        let pending = try await reopened.pending
        #expect(pending.isEmpty)
        #expect(pending.refusals.map(\.item) == [.put(id("a"), version: 0, body: body("{}")), .put(id("a"), version: 1, body: body("{}")),
                                                  .put(id("b"), version: 1, body: body("{}"))])
        #expect(pending.refusals.map(\.status) == [409, 409, 400] && pending.refusals[2].reason == "invalid body")
        #expect(pending.settingsRefusals.map(\.members) == [["notes"]] && pending.settingsRefusals[0].status == 413)
        #expect(pending.settingsRefusals[0].edit == body(#"{"notes": "long"}"#) && pending.settingsRefusals[0].editedAt == t0)
        try await reopened.acknowledgeRefusals(pending.refusals.prefix(2).map(\.number) + [pending.settingsRefusals[0].number])
        #expect(try await reopened.pending.refusals.map(\.item.id) == [id("b")])
        await reopened.close()
        let again = try engine(FakeBox(), directory)
        let left = try await again.pending
        #expect(left.refusals.map(\.item.id) == [id("b")] && left.settingsRefusals.isEmpty)
        _ = state
    }
}
