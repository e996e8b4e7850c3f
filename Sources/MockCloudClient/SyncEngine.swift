import Foundation
import MockCloudJSON
import MockCloudWire

/// Takes the app's changes and owns the rest: it keeps them on disk until
/// the box acknowledges them, sends them whenever the box can be reached,
/// and keeps the app's store following the box.
///
/// - `enqueue` and `editSettings` return once the change is on disk (the
///   state directory's journal, written and synced: docs/SYNC-STATE.md). A
///   crash, a kill or the box away costs time, never what they accepted.
/// - `run()`, until its task is cancelled, sends what is queued (uploads as
///   bulk requests, settings edits as per-field merges), follows the feed
///   into `store` (each page applied with its anchor, a 410 answered with a
///   full read) and follows the settings, with waiting requests. While the
///   box is away it backs off (the client's `RetryPolicy`: capped, with
///   jitter) and resumes by itself; `syncNow()` cuts the wait short. The
///   app's calls never wait for a send.
/// - `events` says what happened: uploads acknowledged or refused, the
///   box's settings, pages applied, the box lost and found again.
///
/// One engine holds a state directory at a time, in this process or any
/// other; a second is refused with an error naming the directory. The
/// directory holds no secret: the client's bearer token stays with the app
/// (in the Keychain), never in the state.
public actor SyncEngine {
    /// What the engine does, as it happens (`Event`), for one reader. The
    /// last 256 unread are kept; older ones are dropped for a reader that
    /// falls behind (the queue and the store are the record, not the events).
    public nonisolated let events: AsyncStream<Event>
    private nonisolated let emitter: AsyncStream<Event>.Continuation
    /// The state directory, its path resolved.
    public nonisolated let stateDirectory: URL
    /// The caller's client, its waits between attempts cut short by `syncNow()`.
    nonisolated let client: BoxClient
    nonisolated let store: any ChangeApplier
    nonisolated let excludingOwnWrites: Bool
    /// Woken by `syncNow()`: a wait before the next attempt ends at once.
    private nonisolated let nudge: Wakeup
    /// Woken by new changes and by `syncNow()`: an idle sender looks again.
    private nonisolated let work = Wakeup()
    private let hold: StateDirectoryHold
    private let journal: SyncJournal
    private var queue: SyncQueue
    private var running = false
    private var unreachable = false

    /// Opens the state in `stateDirectory` (created 0700 when absent) and
    /// holds the directory until the engine is freed or the process ends.
    ///
    /// - Parameters:
    ///   - client: the box, the user and the device; its `deviceID` marks
    ///     this device's writes.
    ///   - store: where `run()` applies the feed: the app's database, each
    ///     page with its anchor in one transaction.
    ///   - excludingOwnWrites: incremental reads skip this device's own
    ///     writes (with a device id), as `sync(into:)`.
    /// - Throws: `ClientError` `local` naming the directory when another
    ///   engine holds it, or naming the file when the state cannot be read
    ///   (a damaged record): nothing is sent and the file is left as it is.
    public init(client: BoxClient, stateDirectory: URL, store: some ChangeApplier, excludingOwnWrites: Bool = true) throws {
        guard stateDirectory.isFileURL else {
            throw ClientError.invalidArgument("the sync state directory must be a file URL (got \(stateDirectory.absoluteString))")
        }
        do {
            try FileManager.default.createDirectory(
                at: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ClientError.local("cannot create the sync state directory \(stateDirectory.path): \(error.localizedDescription)")
        }
        let resolved = stateDirectory.standardizedFileURL.resolvingSymlinksInPath()
        hold = try StateDirectoryHold(resolved.path)
        (journal, queue) = try SyncJournal.open(directory: resolved.path, userKey: client.configuration.userKey)
        self.stateDirectory = resolved
        self.store = store
        self.excludingOwnWrites = excludingOwnWrites
        let nudge = Wakeup()
        var configuration = client.configuration
        let sleep = configuration.sleep
        configuration.sleep = { duration in try await nudge.sleep(for: duration, using: sleep) }
        self.client = BoxClient(configuration: configuration, transport: client.transport)
        self.nudge = nudge
        // Not `AsyncStream.makeStream`: iOS 16's standard library lacks it.
        var emitter: AsyncStream<Event>.Continuation?
        events = AsyncStream(bufferingPolicy: .bufferingNewest(256)) { emitter = $0 }
        self.emitter = emitter!
    }

    deinit { emitter.finish() }

    /// Queues `items` for the box; when this returns they are on disk.
    /// Changes coalesce by id: a later change replaces an earlier unsent one
    /// (a deletion replaces a put), except that a put of a lower version
    /// than one already queued is refused (`Event.refused`, 409): the box
    /// would keep the higher one. Throws `local` when the state cannot be
    /// written; nothing of the call is then queued.
    public func enqueue(_ items: [UploadItem]) throws {
        var admitted: [SyncQueue.Upload] = []
        var refusals: [Refusal] = []
        var queued: [MessageID: UploadItem] = [:]
        var number = queue.lastNumber
        for item in items {
            let held = queued[item.id] ?? queue.uploads[item.id]?.item
            guard SyncQueue.replaces(item, held) else {
                if case .put(let version, _) = item.change, case .put(let newer, _)? = held?.change {
                    refusals.append(Refusal(
                        item: item, status: 409,
                        reason: "version \(version) is older than version \(newer) of \(item.id), queued and not yet sent"))
                }
                continue
            }
            number += 1
            admitted.append(SyncQueue.Upload(number: number, item: item))
            queued[item.id] = item
        }
        if !admitted.isEmpty {
            try record(.enqueue(admitted))
            work.fire()
        }
        if !refusals.isEmpty { emitter.yield(.refused(refusals)) }
    }

    /// Queues an edit of the settings' top-level `members`, each with its
    /// whole new value (`null`: deleted), all edited at `editedAt`; when this
    /// returns it is on disk. A later edit of a member replaces an earlier
    /// unsent one (the one edited later wins, as on the box). `run()` sends
    /// them as per-field merges (docs/API.md §3): an edit of another member
    /// made on another device is kept, and so is this one.
    public func editSettings(_ members: JSONText, at editedAt: Date) throws {
        guard case .object(let object) = members.value else {
            throw ClientError.invalidArgument("the settings edit must be a JSON object of the members edited")
        }
        for name in ["updatedAt", "serverReceivedAt"] where object[name] != nil {
            throw ClientError.invalidArgument("the settings edit holds \(name), which is the box's: pass the time of the edit as `at`")
        }
        let at = BoxClient.micros(editedAt)
        guard Timestamp.supported.contains(at) else {
            throw ClientError.invalidArgument("the edit time \(editedAt) is outside years 1 to 9999")
        }
        guard !object.isEmpty else { return }
        try record(.edit(number: queue.lastNumber + 1, at: at, members: object.members))
        work.fire()
    }

    /// What the box has not acknowledged yet.
    public var pending: Pending {
        Pending(uploads: queue.uploadsInOrder.map(\.item), settingsMembers: queue.edits.mapValues { BoxClient.date($0.at) })
    }

    /// Tries now: a wait before the next attempt ends at once (the app came
    /// to the foreground, the network changed).
    public func syncNow() {
        nudge.fire()
        work.fire()
    }

    /// Sends, follows and retries until the task is cancelled (then it
    /// throws `CancellationError`); see `SyncEngine`. Throws what no retry
    /// can mend, with everything queued kept: an untrusted server, a request
    /// refused as a whole (a token not accepted), an answer it does not
    /// understand, a state it cannot write, or what `store` throws. Run it
    /// again once that is mended.
    public func run() async throws {
        guard !running else { throw ClientError.invalidArgument("this SyncEngine is running already: call run() once at a time") }
        running = true
        defer { running = false }
        try await sendAndFollow()
    }

    /// `run()`'s three loops, until one throws (cancellation included).
    /// Nonisolated: the iOS 16 SDK's task group cannot be awaited from
    /// the actor.
    private nonisolated func sendAndFollow() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.sendQueued() }
            group.addTask { try await self.followFeed() }
            group.addTask { try await self.followSettings() }
            while try await group.next() != nil {}
        }
    }

    // MARK: - The state

    /// Writes `record` to the journal and, once it is on disk, applies it.
    private func record(_ record: SyncRecord) throws {
        try journal.append([record])
        queue.apply(record)
    }

    /// After a record that shortened the queue: the journal rewritten when
    /// most of it is history. A failure leaves the journal as it was and
    /// is tried again after the next acknowledgement.
    private func compact() {
        try? journal.compactIfDue(queue)
    }

    // MARK: - Sending

    /// What one round sends: the settings edits by edit time, then the
    /// uploads in the order they were queued.
    struct Round: Sendable {
        var edits: [(at: Timestamp.Micros, members: [(name: String, edit: SyncQueue.Edit)])]
        var uploads: [SyncQueue.Upload]
        var isEmpty: Bool { edits.isEmpty && uploads.isEmpty }
    }

    /// The queue as a round, and the wake-up count it was taken at.
    private func nextRound() -> (Round, UInt64) {
        let seen = work.count
        let byTime = Dictionary(grouping: queue.edits.sorted { $0.key < $1.key }) { $0.value.at }
        let edits = byTime.keys.sorted().map { at in (at: at, members: byTime[at]!.map { (name: $0.key, edit: $0.value) }) }
        return (Round(edits: edits, uploads: queue.uploadsInOrder), seen)
    }

    /// The sending side of `run()`: rounds while anything is queued, a wait
    /// for work when nothing is, a backoff while the box is away or full.
    private nonisolated func sendQueued() async throws {
        var failures = 0
        while true {
            let (round, seen) = await nextRound()
            if round.isEmpty {
                await work.wait(after: seen)
                try Task.checkCancellation()
                continue
            }
            let delay: Duration
            do {
                guard let deferred = try await send(round) else {
                    failures = 0
                    continue
                }
                failures += 1
                delay = client.configuration.retry.delay(afterAttempt: failures, retryAfter: nil)
                emitter.yield(.deferred(deferred.ids, error: deferred.error, retryIn: delay))
            } catch let error as ClientError where error.code == .unavailable {
                failures += 1
                delay = client.configuration.retry.delay(afterAttempt: failures, retryAfter: nil)
                await lost(error, retryIn: delay)
            }
            try await client.pause(delay)
        }
    }

    /// Sends one round. Each answer is recorded before the next step (the
    /// acknowledged leave the queue, durably). Returns the uploads the box
    /// could not take now (507), to send again after a backoff.
    private nonisolated func send(_ round: Round) async throws -> (ids: [MessageID], error: ClientError)? {
        for (at, members) in round.edits {
            let names = members.map(\.name)
            let numbers = Dictionary(uniqueKeysWithValues: members.map { ($0.name, $0.edit.number) })
            let fields = JSONText(.object(JSONObject(uniqueMembers: members.map { JSONMember($0.name, $0.edit.value) })))
            do {
                let merge = try await client.patchSettings(fields: fields, editedAt: BoxClient.date(at))
                try await settled(numbers, .settingsMerged(names, settings: merge.settings, kept: merge.kept))
            } catch let error as ClientError where error.code == .refused && [400, 409, 413].contains(error.status ?? 0) {
                try await settled(numbers, .settingsRefused(names, error: error))
            }
        }
        guard !round.uploads.isEmpty else { return nil }
        let outcomes = try await client.upload(round.uploads.map(\.item)) { range, outcomes in
            try await acknowledge(Array(round.uploads[range]), Array(outcomes))
        }
        var deferred: [MessageID] = []
        var reason: ClientError?
        for (upload, outcome) in zip(round.uploads, outcomes) {
            guard case .rejected(let status, let error) = outcome, !Self.refuses(status) else { continue }
            deferred.append(upload.item.id)
            reason = reason ?? .refused(status: status, error: error)
        }
        return reason.map { (deferred, $0) }
    }

    /// An upload's status that refuses the change itself (400, 413), which
    /// no retry mends: it leaves the queue. A 5xx (507: the box is full)
    /// keeps it queued. A settings edit is refused by 400, 409 or 413; other
    /// refusals of a request as a whole (401, 403: the token) end `run()`.
    private static func refuses(_ status: Int) -> Bool { status < 500 }

    /// Records what the box answered for `uploads`: those it holds, or
    /// refused, leave the queue (one record, synced), then the events.
    private func acknowledge(_ uploads: [SyncQueue.Upload], _ outcomes: [UploadOutcome]) throws {
        reached()
        var done: [Int64] = []
        var stored: [MessageID] = []
        var refusals: [Refusal] = []
        for (upload, outcome) in zip(uploads, outcomes) {
            switch outcome {
            case .stored, .deleted:
                stored.append(upload.item.id)
            case .conflict(let current):
                refusals.append(Refusal(
                    item: upload.item, status: 409,
                    reason: "the box holds version \(current.version) of \(upload.item.id), newer than this one", current: current))
            case .rejected(let status, let error):
                guard Self.refuses(status) else { continue }
                refusals.append(Refusal(item: upload.item, status: status, reason: error))
            }
            done.append(upload.number)
        }
        guard !done.isEmpty else { return }
        try record(.done(done))
        if !stored.isEmpty { emitter.yield(.uploaded(stored)) }
        if !refusals.isEmpty { emitter.yield(.refused(refusals)) }
        compact()
    }

    /// Records that the settings edits `numbers` left the queue, then `event`.
    private func settled(_ numbers: [String: Int64], _ event: Event) throws {
        reached()
        try record(.editsDone(numbers))
        emitter.yield(event)
        compact()
    }

    // MARK: - Following

    /// The feed into `store` with waits, each page with its anchor in one
    /// step, the 410 handled (`BoxClient.apply(into:…follow:)`, the loop of
    /// `sync(into:)`); a box away before the first wait is retried.
    private nonisolated func followFeed() async throws {
        var failures = 0
        while true {
            do {
                _ = try await client.apply(into: store, excludingOwnWrites: excludingOwnWrites, follow: true) { page, _ in
                    failures = 0
                    await applied(page)
                }
            } catch let error as ClientError where error.code == .unavailable {
                failures += 1
                let delay = client.configuration.retry.delay(afterAttempt: failures, retryAfter: nil)
                await lost(error, retryIn: delay)
                try await client.pause(delay)
            }
        }
    }

    /// The box's settings as they change (waits), each an event.
    private nonisolated func followSettings() async throws {
        for try await settings in client.settingsUpdates(after: nil) {
            emitter.yield(.boxSettings(settings))
        }
    }

    private func applied(_ page: ChangePage) {
        reached()
        guard !page.messages.isEmpty || !page.deleted.isEmpty || page.startsResync else { return }
        emitter.yield(.applied(page.messages.map(\.id), deleted: page.deleted.map(\.id), resynced: page.startsResync))
    }

    private func lost(_ error: ClientError, retryIn delay: Duration) {
        unreachable = true
        emitter.yield(.unreachable(error, retryIn: delay))
    }

    private func reached() {
        guard unreachable else { return }
        unreachable = false
        emitter.yield(.reachable)
    }
}

/// A wake-up call for the engine's waits: `fire()` ends every wait under
/// way, and a wait that starts after a `fire()` it has not seen (by
/// `count`) ends at once, so no call is missed between a look and a wait.
final class Wakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var fired: UInt64 = 0
    private var nextWaiter: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// How many times it was fired.
    var count: UInt64 { locked { fired } }

    func fire() {
        let woken = locked { () -> [CheckedContinuation<Void, Never>] in
            fired += 1
            defer { waiters = [:] }
            return Array(waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once it was fired after `seen` fires, or the task is cancelled.
    func wait(after seen: UInt64) async {
        let id = locked { () -> UInt64 in
            nextWaiter += 1
            return nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = locked { () -> Bool in
                    if fired != seen || Task.isCancelled { return true }
                    waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            locked { waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// `sleep(duration)`, ended early by a `fire()`; throws what `sleep`
    /// throws (cancellation).
    func sleep(for duration: Duration, using sleep: @escaping @Sendable (Duration) async throws -> Void) async throws {
        let seen = count
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sleep(duration) }
            group.addTask { await self.wait(after: seen) }
            try await group.next()
            group.cancelAll()
        }
    }
}
