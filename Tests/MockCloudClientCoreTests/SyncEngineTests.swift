import Foundation
import MockCloudClient
import MockCloudClientTestSupport
import MockCloudJSON
import MockCloudPortableTestSupport
import Testing

/// A box for the engine: bulk writes and settings merges answered by the
/// test, the feed's first read an empty page, every waiting request held
/// until its task is cancelled (as the box holds a wait with nothing new).
actor FakeBox: HTTPTransport {
    typealias Answer = @Sendable (TransportRequest, Int) async -> Result<TransportResponse, TransportError>
    private let bulk: Answer
    private let merge: Answer
    private let feed: String
    /// Answers the feed's reads instead of `feed`, when given.
    private let inbox: Answer?
    private let settings: String?
    private(set) var requests: [TransportRequest] = []
    private var writes = 0
    /// Requests under way now, and those that ended cancelled.
    private(set) var inFlight = 0, cancelled = 0

    init(
        bulk: @escaping Answer = { request, _ in FakeServer.storeAll(request) }, merge: @escaping Answer = FakeBox.merged,
        feed: String = page([], anchor: "aa.0.0", hasMore: false), settings: String? = nil, inbox: Answer? = nil
    ) {
        self.inbox = inbox
        self.bulk = bulk
        self.merge = merge
        self.feed = feed
        self.settings = settings
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        requests.append(request)
        inFlight += 1
        defer { inFlight -= 1 }
        do {
            let response = try await answer(request)
            try Task.checkCancellation()
            return response
        } catch is CancellationError {
            cancelled += 1
            throw CancellationError()
        }
    }

    private func answer(_ request: TransportRequest) async throws -> TransportResponse {
        if request.target.contains("wait=") {
            try await Task.sleep(for: .seconds(3600))
            throw TransportError.connection("held for an hour")
        }
        switch (request.method, request.target) {
        case ("GET", let target) where target.hasPrefix("/inbox"):
            if let inbox { return try await inbox(request, writes).get() }
            return try FakeServer.json(200, feed).get()
        case ("GET", "/user/settings") where settings != nil:
            return try FakeServer.json(200, settings!, headers: [("etag", #""s1""#)]).get()
        case ("POST", "/inbox:bulk"):
            writes += 1
            return try await bulk(request, writes).get()
        case ("PATCH", "/user/settings"):
            writes += 1
            return try await merge(request, writes).get()
        default:
            return try FakeServer.json(404, #"{"error": "not found"}"#).get()
        }
    }

    /// An answer held until the request is cancelled.
    static let held: Answer = { _, _ in
        try? await Task.sleep(for: .seconds(3600))
        return .failure(.connection("held for an hour"))
    }

    /// The bulk requests' items, as id (version or "deleted") strings.
    var sentItems: [[String]] {
        requests.filter { $0.target == "/inbox:bulk" }.map { request in
            FakeServer.items(request).map { item in
                let id = item["id"]?.stringValue ?? "?"
                guard item["deleted"] == nil else { return "\(id) deleted" }
                guard case .number(let version)? = item["version"] else { return "\(id) without a version" }
                return "\(id) v\(version)"
            }
        }
    }

    var merges: [TransportRequest] { requests.filter { $0.method == "PATCH" } }

    /// A per-field merge's answer: the patch as the stored document.
    static let merged: Answer = { request, _ in
        .success(TransportResponse(status: 200, headers: [("x-merge", "fields"), ("etag", #""e1""#)], body: request.body))
    }
}

/// The engine's events, read until `done` says enough; a run that never
/// gets there fails the test after a minute instead of hanging it.
func events(of engine: SyncEngine, until done: @escaping @Sendable ([SyncEngine.Event]) -> Bool) async -> [SyncEngine.Event] {
    let reader = Task { () -> [SyncEngine.Event] in
        var seen: [SyncEngine.Event] = []
        for await event in engine.events {
            seen.append(event)
            if done(seen) { break }
        }
        return seen
    }
    let guardTask = Task {
        try await Task.sleep(for: .seconds(60))
        reader.cancel()
    }
    let seen = await reader.value
    guardTask.cancel()
    if !done(seen) { Issue.record("the engine's events stopped short: \(seen.map(\.description))") }
    return seen
}

func engineClient(_ box: FakeBox, waits: Waits = Waits(), token: String? = nil, policy: RetryPolicy? = nil, actually: Duration = .zero) -> BoxClient {
    BoxClient(
        configuration: ClientConfiguration(
            userKey: UserKey("u1")!, deviceID: DeviceID("phone-1"), token: token,
            retry: policy ?? RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(100), maxDelay: .seconds(1), maxRetryAfter: .seconds(60))
        ).recording(waits, actually: actually),
        transport: box)
}

/// Runs `engine` while `body` runs, then stops it and waits for the run to end.
func whileRunning<T>(_ engine: SyncEngine, _ body: () async throws -> T) async rethrows -> T {
    let running = Task { try await engine.run() }
    do {
        let result = try await body()
        running.cancel()
        _ = await running.result
        return result
    } catch {
        running.cancel()
        _ = await running.result
        throw error
    }
}

@Suite struct SyncEngineTests {
    @Test func changesCoalesceByIdBeforeTheyAreSent() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox()
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue([.put(id("a"), version: 1, body: body(#"{"v": 1}"#)), .put(id("b"), version: 1, body: body("{}"))])
        try await engine.enqueue([.put(id("a"), version: 2, body: body(#"{"v": 2}"#)), .delete(id("b"))])
        try await engine.enqueue([.put(id("c"), version: 5, body: body("{}")), .put(id("c"), version: 3, body: body("{}"))])
        let pending = try await engine.pending
        #expect(pending.uploads == [.put(id("a"), version: 2, body: body(#"{"v": 2}"#)), .delete(id("b")), .put(id("c"), version: 5, body: body("{}"))])
        let seen = await whileRunning(engine) {
            await events(of: engine) { $0.contains { $0.kind == .uploaded } }
        }
        #expect(await box.sentItems == [["a v2", "b deleted", "c v5"]])
        let refused = seen.first { $0.kind == .refused }?.refusals
        #expect(refused?.map(\.item) == [.put(id("c"), version: 3, body: body("{}"))] && refused?.first?.status == 409)
        #expect(refused?.first?.reason == "version 3 is older than version 5 of c, queued and not yet sent")
        #expect(seen.first { $0.kind == .uploaded }?.ids == [id("a"), id("b"), id("c")])
        #expect(try await engine.pending.isEmpty)
    }

    @Test func aRefusedItemLeavesTheQueueWithItsReasonAndAFullBoxKeepsIt() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in
            guard n == 1 else { return FakeServer.storeAll(request) }
            return FakeServer.json(200, #"{"results": [{"id": "a", "status": 409, "error": "older", "current": \#(envelope("a", version: 7, seq: 3))}, "#
                + #"{"id": "b", "status": 400, "error": "invalid body"}, {"id": "c", "status": 201, "seq": 4}, "#
                + #"{"id": "d", "status": 507, "error": "the key holds 100000 messages", "changed": "no"}]}"#)
        })
        let waits = Waits()
        let engine = try SyncEngine(client: engineClient(box, waits: waits), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue(["a", "b", "c", "d"].map { .put(id($0), version: 1, body: body("{}")) })
        let seen = await whileRunning(engine) {
            await events(of: engine) { $0.filter { $0.kind == .uploaded }.count == 2 }
        }
        let refusals = seen.first { $0.kind == .refused }?.refusals ?? []
        #expect(refusals.map(\.item.id) == [id("a"), id("b")] && refusals.map(\.status) == [409, 400])
        #expect(refusals[0].current?.version == 7 && refusals[0].reason == "the box holds version 7 of a, newer than this one")
        #expect(refusals[1].reason == "invalid body")
        let deferred = seen.first { $0.kind == .deferred }
        #expect(deferred?.ids == [id("d")] && deferred?.error?.status == 507)
        #expect(seen.filter { $0.kind == .uploaded }.map(\.ids) == [[id("c")], [id("d")]])
        #expect(await box.sentItems == [["a v1", "b v1", "c v1", "d v1"], ["d v1"]])  // a and b never again
        #expect(waits.seconds.count == 1 && (0.05...0.1).contains(waits.seconds[0]))
        #expect(try await engine.pending.isEmpty)
    }

    @Test func theBoxAwayIsWaitedOutWithCappedJitteredBackoffAndResumedByItself() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in n <= 16 ? .failure(.connection("Connection refused")) : FakeServer.storeAll(request) })
        let waits = Waits()
        let engine = try SyncEngine(client: engineClient(box, waits: waits), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let seen = await whileRunning(engine) {
            await events(of: engine) { $0.contains { $0.kind == .uploaded } }
        }
        let lost = seen.filter { $0.kind == .unreachable }
        // 16 refused connections: 8 rounds of the client's 2 attempts, each round then backed off.
        #expect(lost.count == 8 && lost.allSatisfy { $0.error?.code == .unavailable })
        let backoffs = lost.compactMap(\.retryIn)
        #expect(backoffs.count == 8 && backoffs.allSatisfy { $0 <= .seconds(1) && $0 >= .milliseconds(50) })
        #expect(backoffs.suffix(4).allSatisfy { $0 >= .milliseconds(500) })  // 100 ms doubled, capped at 1 s, jittered by half
        #expect(Set(backoffs).count > 1)
        #expect(seen.map(\.kind).suffix(2) == [.reachable, .uploaded])
        #expect(await box.sentItems.count == 17)
        #expect(try await engine.pending.isEmpty)
    }

    @Test func syncNowCutsALongBackoffShort() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(bulk: { request, n in n == 1 ? .failure(.connection("Connection refused")) : FakeServer.storeAll(request) })
        let client = BoxClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, deviceID: DeviceID("phone-1"),
                retry: RetryPolicy(maxAttempts: 1, initialDelay: .seconds(3600), maxDelay: .seconds(3600), maxRetryAfter: .seconds(60))),
            transport: box)
        let engine = try SyncEngine(client: client, stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue([.put(id("a"), body: body("{}"))])
        let seen = await whileRunning(engine) {
            await events(of: engine) { seen in
                if seen.last?.kind == .unreachable { Task { await engine.syncNow() } }
                return seen.contains { $0.kind == .uploaded }
            }
        }
        #expect(seen.first?.kind == .unreachable && seen.first!.retryIn! >= .seconds(1800))
        #expect(await box.sentItems.count == 2)
    }

    @Test func settingsEditsGoAsPerFieldMergesOnePerEditTimeTheLaterEditWinning() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox()
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        let t0 = Date(timeIntervalSince1970: 1_779_098_400), t1 = t0 + 60, t2 = t0 + 300
        try await engine.editSettings(body(#"{"weightCalibrationFactor": 0.999}"#), at: t1)
        try await engine.editSettings(body(#"{"unitSystem": "imperial"}"#), at: t2)
        try await engine.editSettings(body(#"{"weightCalibrationFactor": 1.0, "heightCm": null}"#), at: t0)
        #expect(try await engine.pending.settingsMembers == ["weightCalibrationFactor": t1, "unitSystem": t2, "heightCm": t0])
        await #expect(throws: ClientError.invalidArgument("the settings edit holds updatedAt, which is the box's: pass the time of the edit as `at`")) {
            try await engine.editSettings(body(#"{"updatedAt": "2026-05-18T10:00:00Z"}"#), at: t0)
        }
        let seen = await whileRunning(engine) {
            await events(of: engine) { $0.filter { $0.kind == .settingsMerged }.count == 3 }
        }
        let bodies = await box.merges.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(bodies == [#"{"heightCm": null, "updatedAt": "20260518T100000.000000Z"}"#,
                           #"{"weightCalibrationFactor": 0.999, "updatedAt": "20260518T100100.000000Z"}"#,
                           #"{"unitSystem": "imperial", "updatedAt": "20260518T100500.000000Z"}"#])
        #expect(await box.merges.allSatisfy { $0.headers.contains { $0 == ("X-Merge", "fields") } })
        #expect(seen.filter { $0.kind == .settingsMerged }.map(\.members) == [["heightCm"], ["weightCalibrationFactor"], ["unitSystem"]])
        #expect(try await engine.pending.isEmpty)
    }

    @Test func aRefusedSettingsEditLeavesTheQueueAndARefusedTokenEndsTheRun() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(merge: { _, n in
            n == 1 ? FakeServer.json(413, #"{"error": "request body too large"}"#) : FakeServer.json(403, #"{"error": "bearer token not accepted"}"#)
        })
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.editSettings(body(#"{"notes": "long"}"#), at: Date(timeIntervalSince1970: 1_779_098_400))
        let seen = await whileRunning(engine) { await events(of: engine) { $0.contains { $0.kind == .settingsRefused } } }
        #expect(seen.first { $0.kind == .settingsRefused }?.error == .refused(status: 413, error: "request body too large"))
        #expect(try await engine.pending.isEmpty)
        try await engine.editSettings(body(#"{"unitSystem": "metric"}"#), at: Date(timeIntervalSince1970: 1_779_098_460))
        await #expect(throws: ClientError.refused(status: 403, error: "bearer token not accepted")) { try await engine.run() }
        #expect(try await engine.pending.settingsMembers.keys.sorted() == ["unitSystem"])  // kept for a run with a good token
    }

    @Test func enqueueDuringASendReturnsWithoutWaitingForIt() async throws {
        let directory = try TemporaryDirectory()
        let (gate, opener) = AsyncStream<Void>.makeStream()
        let box = FakeBox(bulk: { request, n in
            if n == 1 { for await _ in gate { break } }
            return FakeServer.storeAll(request)
        })
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue([.put(id("a"), version: 1, body: body("{}"))])
        let seen = try await whileRunning(engine) { () async throws -> [SyncEngine.Event] in
            while await box.sentItems.isEmpty { await Task.yield() }
            try await engine.enqueue([.put(id("a"), version: 2, body: body("{}")), .put(id("b"), body: body("{}"))])  // the send is held
            #expect(try await engine.pending.uploads.map(\.id) == [id("a"), id("b")])
            opener.yield()
            return await events(of: engine) { $0.filter { $0.kind == .uploaded }.count == 2 }
        }
        #expect(await box.sentItems == [["a v1"], ["a v2", "b v0"]])
        #expect(seen.filter { $0.kind == .uploaded }.map(\.ids) == [[id("a")], [id("a"), id("b")]])
        #expect(try await engine.pending.isEmpty)
    }

    @Test func theFeedIsFollowedIntoTheStoreWithItsAnchor() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox(feed: page([envelope("m1", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: false))
        let store = AppStore(anchor: nil)
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: store)
        let seen = await whileRunning(engine) { await events(of: engine) { $0.contains { $0.kind == .applied } } }
        #expect(seen.first { $0.kind == .applied }?.ids == [id("m1")])
        #expect(await store.held == [id("m1"): 1])
        #expect(await store.anchor == Anchor("aa.0.1"))
        #expect(await box.requests.contains { $0.target == "/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1&wait=30" })
    }

    @Test func theQueueIsOnDiskWhenTheCallReturnsAndTheTokenNeverIs() async throws {
        let directory = try TemporaryDirectory()
        let state = URL(fileURLWithPath: directory.file("state"))
        let token = "mct_0123456789abcdef0123456789abcdef"
        do {
            let engine = try SyncEngine(client: engineClient(FakeBox(), token: token), stateDirectory: state, store: AppStore(anchor: nil))
            try await engine.enqueue([.put(id("a"), version: 3, body: body(#"{"kg": 70.1}"#)), .delete(id("b"))])
            try await engine.editSettings(body(#"{"unitSystem": "imperial"}"#), at: Date(timeIntervalSince1970: 1_779_098_460))
        }
        let reopened = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
        let pending = try await reopened.pending
        #expect(pending.uploads == [.put(id("a"), version: 3, body: body(#"{"kg": 70.1}"#)), .delete(id("b"))])
        #expect(pending.settingsMembers == ["unitSystem": Date(timeIntervalSince1970: 1_779_098_460)])
        #expect(directory.entries("state") == ["journal", "lock", "sent"])
        #expect(directory.mode(of: "state") == 0o700 && directory.mode(of: "state/journal") == 0o600 && directory.mode(of: "state/sent") == 0o600)
        for name in directory.entries("state") {
            #expect(!(directory.text(of: "state/" + name) ?? "").contains(token))
        }
    }

    @Test func aSecondEngineOnOneDirectoryIsRefusedUntilTheFirstIsGone() async throws {
        let directory = try TemporaryDirectory()
        let state = URL(fileURLWithPath: directory.file("state"))
        var first: SyncEngine? = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
        #expect(throws: ClientError.stateInUse(
            "the sync state directory \(first!.stateDirectory.path) is in use by another SyncEngine in this process: use that engine"
                + " (one per directory), or let it go before making another")) {
            try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
        }
        #expect(first != nil)
        first = nil
        _ = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
    }

    @Test func aDamagedJournalStopsTheEngineNamingTheFileAndIsLeftAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let state = URL(fileURLWithPath: directory.file("state"))
        let journal: String
        do {
            let engine = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
            journal = engine.stateDirectory.path + "/journal"
            for n in 0..<3 { try await engine.enqueue([.put(id("s-\(n)"), body: body(#"{"n": \#(n)}"#))]) }
        }
        var bytes = directory.bytes(of: "state/journal")!
        let second = bytes.indices.filter { bytes[$0] == UInt8(ascii: "\n") }[1] + 1  // the second enqueue's record
        bytes[second + 30] ^= 0x01
        try directory.write(bytes, to: "state/journal")
        let box = FakeBox()
        #expect(throws: ClientError.stateDamaged(
            "the sync state file \(journal) is damaged at record 3 (byte \(second)): its checksum does not match, or it is not a record"
                + " this version writes. Nothing was sent and the file is as it was. Restore it from a backup, or move it aside to start"
                + " with nothing pending (what it held is then not sent)")) {
            try SyncEngine(client: engineClient(box), stateDirectory: state, store: AppStore(anchor: nil))
        }
        #expect(directory.bytes(of: "state/journal") == bytes)
        #expect(await box.requests.isEmpty)
    }

    @Test func aRecordACrashCutOffIsDroppedAndTheRestKept() async throws {
        let directory = try TemporaryDirectory()
        let state = URL(fileURLWithPath: directory.file("state"))
        do {
            let engine = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
            try await engine.enqueue([.put(id("kept"), body: body("{}"))])
        }
        let whole = directory.bytes(of: "state/journal")!
        try directory.write(whole + Array(#"0123456789abcdef {"enqueue": [{"n": 2, "id": "torn""#.utf8), to: "state/journal")
        let engine = try SyncEngine(client: engineClient(FakeBox()), stateDirectory: state, store: AppStore(anchor: nil))
        #expect(try await engine.pending.uploads.map(\.id) == [id("kept")])
        #expect(directory.bytes(of: "state/journal")?.last == UInt8(ascii: "\n"))
        try await engine.enqueue([.put(id("next"), body: body("{}"))])
        #expect(try await engine.pending.uploads.map(\.id) == [id("kept"), id("next")])
    }

    @Test func theJournalIsRewrittenOnceWhatItHeldWasAcknowledged() async throws {
        let directory = try TemporaryDirectory()
        let box = FakeBox()
        let engine = try SyncEngine(
            client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        let padding = String(repeating: "x", count: 400)
        try await engine.enqueue((0..<300).map { .put(id("s-\($0)"), body: body(#"{"pad": "\#(padding)"}"#)) })
        #expect((directory.bytes(of: "journal")?.count ?? 0) > 120_000)
        _ = await whileRunning(engine) { await events(of: engine) { $0.contains { $0.kind == .uploaded } } }
        let journal = directory.text(of: "journal") ?? ""
        #expect(journal.split(separator: "\n").count == 1 && journal.contains(#""numbered": 300"#))
    }
}
