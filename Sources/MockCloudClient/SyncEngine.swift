import Dispatch
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
///   bulk requests, settings edits as per-field merges, each on its own so
///   that neither holds the other up), follows the feed into `store` (each
///   page applied with its anchor, a 410 answered with a full read) and
///   follows the settings, with waiting requests. While the box is away (or
///   answers with a certificate of another network's) it backs off and
///   resumes by itself; what the box defers backs off up to 10 minutes;
///   `syncNow()` cuts every wait short. The app's calls never wait for a send.
/// - `syncUntilIdle(within:)` does the same for a background task's time;
///   `networkChanged(available:)` pauses and resumes every attempt;
///   `close()` stops it all and lets the directory go.
/// - `events` says what happened: uploads acknowledged, refused or
///   deferred, the box's settings, pages applied, the box lost and found
///   again, and the error that stopped `run()`.
///
/// One engine holds a state directory at a time, in this process or any
/// other; a second is refused with an error naming the directory. The
/// directory holds no secret: the client's bearer token stays with the app
/// (in the Keychain), never in the state.
public actor SyncEngine {
    /// What the engine does, as it happens (`Event`), for one reader. The
    /// last 256 unread are kept; older ones are dropped for a reader that
    /// falls behind (the queue and the store are the record, not the
    /// events). It finishes after a `stopped` event, and at `close()`.
    public nonisolated let events: AsyncStream<Event>
    private nonisolated let emitter: AsyncStream<Event>.Continuation
    /// The state directory, its path resolved.
    public nonisolated let stateDirectory: URL
    /// The caller's client, its waits cut short by `syncNow()` and held while
    /// the network is away, its transfers counted.
    nonisolated let client: BoxClient
    nonisolated let store: any ChangeApplier
    nonisolated let excludingOwnWrites: Bool
    /// Woken by `syncNow()` and the network's return: a backoff ends at once.
    private nonisolated let nudge = Wakeup()
    /// Woken by new uploads and by `syncNow()`: an idle or deferred sender looks again.
    private nonisolated let work = Wakeup()
    /// The same for settings edits.
    private nonisolated let edited = Wakeup()
    private nonisolated let network = NetworkGate()
    private nonisolated let transfers = TransferCount()
    private nonisolated let idle = IdleWatch()
    private let hold: StateDirectoryHold
    private let journal: SyncJournal
    /// What the box acknowledged, to send again if it loses it.
    private let sent: SentLog
    private var queue: SyncQueue { journal.queue }
    /// The loops that send and follow, and whether `run()` started them
    /// (else `syncUntilIdle`, for its time).
    private var loops: (task: Task<Void, any Error>, forRun: Bool)?
    private var running = false
    private var unreachable = false
    private var closed = false
    /// The error that stopped the engine (`Event.stopped`), once it did.
    private var stopped: ClientError?
    /// The box's settings as last read or merged (nil: none read yet).
    private var boxSettings: BoxSettings??

    /// Opens the state in `stateDirectory` (created 0700 when absent) and
    /// holds the directory until `close()`, until the engine is freed, or
    /// until the process ends. It reads and locks files on the caller's
    /// thread: at launch, on the main thread, use `open(client:…)`.
    ///
    /// - Parameters:
    ///   - client: the box, the user and the device; its `deviceID` marks
    ///     this device's writes.
    ///   - store: where `run()` applies the feed: the app's database, each
    ///     page with its anchor in one transaction.
    ///   - excludingOwnWrites: incremental reads skip this device's own
    ///     writes (with a device id), as `sync(into:)`.
    ///   - stateOptions: how the directory is kept on Apple platforms (its
    ///     Data Protection class, whether backups leave it out).
    /// - Throws: `ClientError` `local` naming the directory when another
    ///   engine holds it, or naming the file when the state cannot be read
    ///   (a damaged record): nothing is sent and the file is left as it is.
    public init(
        client: BoxClient, stateDirectory: URL, store: some ChangeApplier, excludingOwnWrites: Bool = true,
        stateOptions: StateOptions = StateOptions()
    ) throws {
        guard stateDirectory.isFileURL else {
            throw ClientError.invalidArgument("the sync state directory must be a file URL (got \(stateDirectory.absoluteString))")
        }
        try stateOptions.prepare(stateDirectory)
        let resolved = stateDirectory.standardizedFileURL.resolvingSymlinksInPath()
        hold = try StateDirectoryHold(resolved.path)
        journal = try SyncJournal.open(directory: resolved.path, userKey: client.configuration.userKey)
        sent = try SentLog.open(directory: resolved.path)
        self.stateDirectory = resolved
        self.store = store
        self.excludingOwnWrites = excludingOwnWrites
        var configuration = client.configuration
        configuration.clock = engineClock(configuration.clock, nudge: nudge, network: network)
        self.client = BoxClient(configuration: configuration, transport: CountedTransport(base: client.transport, transfers: transfers))
        // Not `AsyncStream.makeStream`: iOS 16's standard library lacks it.
        var emitter: AsyncStream<Event>.Continuation?
        events = AsyncStream(bufferingPolicy: .bufferingNewest(256)) { emitter = $0 }
        self.emitter = emitter!
    }

    /// `init`, with the state's file reading and locking on a thread of
    /// its own: the caller's thread (the main thread at launch) stays free.
    public static func open(
        client: BoxClient, stateDirectory: URL, store: some ChangeApplier, excludingOwnWrites: Bool = true,
        stateOptions: StateOptions = StateOptions()
    ) async throws -> SyncEngine {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    try SyncEngine(
                        client: client, stateDirectory: stateDirectory, store: store, excludingOwnWrites: excludingOwnWrites,
                        stateOptions: stateOptions)
                })
            }
        }
    }

    deinit { emitter.finish() }

    /// Queues `items` for the box; when this returns they are on disk.
    /// Changes coalesce by id: a later change replaces an earlier unsent one
    /// (a deletion replaces a put), except that a put of a lower version
    /// than one already queued is refused (`Event.refused`, 409): the box
    /// would keep the higher one. Throws `local` when the state cannot be
    /// written; nothing of the call is then queued.
    public func enqueue(_ items: [UploadItem]) throws {
        try checkOpen()
        var admitted: [SyncQueue.Upload] = []
        var refusals: [(UploadItem, String)] = []
        var queued: [MessageID: Int64?] = [:]
        var number = queue.lastNumber
        for item in items {
            let held = queued[item.id] ?? queue.uploads[item.id]?.version
            guard SyncQueue.replaces(item.queuedVersion, heldVersion: held) else {
                if case .put(let version, _) = item.change, let newer = held {
                    refusals.append((item, "version \(version) is older than version \(newer) of \(item.id), queued and not yet sent"))
                }
                continue
            }
            number += 1
            admitted.append(SyncQueue.Upload(number: number, item: item))
            queued[item.id] = item.queuedVersion
        }
        let refused = refusals.map { item, reason in
            number += 1
            return SyncQueue.Refused(number: number, change: .upload(item), status: 409, reason: reason)
        }
        try record((admitted.isEmpty ? [] : [.enqueue(admitted)]) + (refused.isEmpty ? [] : [.refused(refused)]))
        if !admitted.isEmpty { work.fire() }
        if !refused.isEmpty { emitter.yield(.refused(refused.compactMap(Refusal.init))) }
    }

    /// Queues an edit of the settings' top-level `members`, each with its
    /// whole new value (`null`: deleted), all edited at `editedAt`; when this
    /// returns it is on disk. A later edit of a member replaces an earlier
    /// unsent one (the one edited later wins, as on the box); an edit older
    /// than the one queued for its member is refused (`Event.settingsRefused`,
    /// 409), as the box would. `run()` sends them as per-field merges
    /// (docs/API.md §3): an edit of another member made on another device is
    /// kept, and so is this one.
    public func editSettings(_ members: JSONText, at editedAt: Date) throws {
        try checkOpen()
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
        let olderNames = Set(object.members.filter { (queue.edits[$0.key]?.at ?? .min) > at }.map(\.key))
        let older = object.members.filter { olderNames.contains($0.key) }
        let taken = object.members.filter { !olderNames.contains($0.key) }
        var records: [SyncRecord] = []
        var number = queue.lastNumber
        if !taken.isEmpty {
            number += 1
            records.append(.edit(number: number, at: at, members: taken))
        }
        var refusal: SyncQueue.Refused?
        if !older.isEmpty {
            let times = older.map { "\($0.key) at \(Timestamp.format(queue.edits[$0.key]!.at))" }.joined(separator: ", ")
            let reason = "an edit made at \(Timestamp.format(at)) is older than the one queued and not yet sent: \(times)"
            refusal = SyncQueue.Refused(number: number + 1, change: .edit(at: at, members: older), status: 409, reason: reason)
            records.append(.refused([refusal!]))
        }
        try record(records)
        if !taken.isEmpty { edited.fire() }
        if let refusal {
            emitter.yield(.settingsRefused(older.map(\.key), error: .refused(status: 409, error: refusal.reason)))
        }
    }

    /// What the box has not acknowledged yet, and the refusals the app has
    /// not taken yet (`acknowledgeRefusals`). The bodies are read from the
    /// state directory (the engine keeps them there, not in memory): it
    /// costs as much as the queue; `pendingCount` is the cheap count.
    /// Throws `local` when the state cannot be read.
    public var pending: Pending {
        get throws {
            let refused = queue.refused.values.sorted { $0.number < $1.number }
            return Pending(
                uploads: try journal.load(queue.uploadsInOrder).map(\.item),
                settingsMembers: queue.edits.mapValues { BoxClient.date($0.at) },
                refusals: refused.compactMap(Refusal.init), settingsRefusals: refused.compactMap(SettingsRefusal.init))
        }
    }

    /// How many changes the box has not acknowledged yet: uploads (one per
    /// id) and settings members. Reads nothing: as cheap as a property.
    public var pendingCount: Int { queue.uploads.count + queue.edits.count }

    /// The app has taken these refusals (`Refusal.number`,
    /// `SettingsRefusal.number`: it showed them, or recorded them in its
    /// own store): they leave the state. Until then a refusal stays in
    /// `pending`, across restarts, so that an app killed before it read
    /// `events` still learns of it. Unknown numbers are ignored. Throws
    /// `local` when the state cannot be written (nothing then changed).
    public func acknowledgeRefusals(_ numbers: [Int64]) throws {
        try checkOpen()
        let known = numbers.filter { queue.refused[$0] != nil }
        guard !known.isEmpty else { return }
        try record([.taken(known)])
        compact()
    }

    /// The settings an app should show: the box's (as this engine last read
    /// or merged them) with this device's unsent edits over them; nil when
    /// neither holds anything. Before the engine has read the box's, it
    /// reads them now, and throws what that read throws (`unavailable`
    /// while the box is away).
    public func settingsToShow() async throws -> JSONText? {
        if boxSettings == nil {
            let read = try await client.settings()
            if boxSettings == nil { boxSettings = .some(read) }
        }
        let box = boxSettings ?? nil
        guard !queue.edits.isEmpty else { return box?.document }
        var shown = box?.document.value.objectValue ?? JSONObject([])
        for (name, edit) in queue.edits.sorted(by: { $0.key < $1.key }) {
            shown[name] = edit.value == .null ? nil : edit.value
        }
        return JSONText(.object(shown))
    }

    /// Tries now: every wait before the next attempt ends at once (the app
    /// came to the foreground), what the box deferred included.
    public func syncNow() {
        nudge.fire()
        work.fire()
        edited.fire()
    }

    /// What the app knows of the network (the phone on or off Wi-Fi). While
    /// it is not `available` the engine makes no attempt, and its backoffs
    /// do not grow; a request already in flight ends as it will. Once it is,
    /// the engine tries at once.
    public func networkChanged(available: Bool) {
        network.set(open: available)
        if available { syncNow() }
    }

    /// Sends, follows and retries until the task is cancelled (then it
    /// throws `CancellationError`) or `close()`; see `SyncEngine`. Throws
    /// what no retry can mend, with everything queued kept: a request
    /// refused as a whole (401, 403: a token not accepted), an answer it
    /// does not understand, a state it cannot write, or what `store`
    /// throws. That error also comes as a `stopped` event, after which
    /// `events` finishes: make a new engine once it is mended (`close()`
    /// this one first).
    public func run() async throws {
        try checkOpen()
        guard !running else { throw ClientError.invalidArgument("this SyncEngine is running already: call run() once at a time") }
        running = true
        defer { running = false }
        // `syncUntilIdle`'s loops end by its deadline; then run() starts its own.
        while let current = loops {
            _ = await current.task.result
            if loops?.task == current.task { loops = nil }
        }
        try checkOpen()
        let task = startLoops(forRun: true)
        defer { if loops?.task == task { loops = nil } }
        do {
            try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw stop(error)
        }
    }

    /// For a background task: sends what is pending and reads the feed into
    /// the store until nothing is left to do now (what the box deferred
    /// stays pending), or until `limit` has passed, whichever comes first;
    /// returns what is still pending, within `limit` and a second. At the
    /// limit it cancels the requests in flight; everything not acknowledged
    /// stays queued for the next time. While `run()` runs, it makes no
    /// requests of its own: it cuts `run()`'s waits short and waits for it
    /// to be idle. With no network (`networkChanged(available: false)`) it
    /// returns at once. Throws what would stop `run()` (and stops the
    /// engine as `run()` would), and `CancellationError` when its task is
    /// cancelled.
    public func syncUntilIdle(within limit: Duration) async throws -> Pending {
        try checkOpen()
        guard network.isOpen else { return try pending }
        let deadline = ContinuousClock.now + limit
        idle.reset([.uploads, .edits])
        let own = loops == nil ? startLoops(forRun: false) : nil
        syncNow()
        let ended = await Self.idleOrEnded(idle, before: deadline)
        if let own {
            own.cancel()
            _ = await own.result
            if loops?.task == own { loops = nil }
        }
        try Task.checkCancellation()
        if let ended, !(ended is CancellationError) { throw stop(ended) }
        return try pending
    }

    /// Stops `run()` (it throws `CancellationError`) and `syncUntilIdle`,
    /// waits until they and every transfer of theirs have ended, then lets
    /// the state directory go (a new engine on it is accepted at once) and
    /// finishes `events`. Everything not acknowledged stays on disk. Every
    /// later call but `pending` throws; a second `close()` does nothing.
    public func close() async {
        guard !closed else { return }
        closed = true
        while let current = loops {
            current.task.cancel()
            _ = await current.task.result
            if loops?.task == current.task { loops = nil }
        }
        await transfers.drained()
        hold.release()
        emitter.finish()
    }

    private func checkOpen() throws {
        if closed {
            throw ClientError.invalidArgument("this SyncEngine is closed: make a new one on \(stateDirectory.path)")
        }
        if let stopped { throw stopped }
    }

    /// The engine stopped for `error`: said as the last event, and thrown again by later calls.
    private func stop(_ error: any Error) -> ClientError {
        let failure = error as? ClientError ?? .local("the engine stopped: \(ClientError.describe(error))")
        if stopped == nil {
            stopped = failure
            emitter.yield(.stopped(failure))
            emitter.finish()
        }
        return failure
    }

    /// Starts the loops that send and follow; their end (an error) is told to `idle`.
    private func startLoops(forRun: Bool) -> Task<Void, any Error> {
        idle.reset()
        let idle = idle
        let task = Task {
            do {
                try await self.sendAndFollow()
            } catch {
                idle.ended(error)
                throw error
            }
        }
        loops = (task, forRun)
        return task
    }

    /// Waits until every loop is idle (nil), the loops ended (their
    /// error), or the deadline (nil). Nonisolated: the iOS 16 SDK's task
    /// group cannot be awaited from the actor.
    private nonisolated static func idleOrEnded(_ idle: IdleWatch, before deadline: ContinuousClock.Instant) async -> (any Error)? {
        await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await idle.allIdle() }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
    }

    /// The four loops, until one throws (cancellation included).
    /// Nonisolated: the iOS 16 SDK's task group cannot be awaited from
    /// the actor.
    private nonisolated func sendAndFollow() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.sendUploads() }
            group.addTask { try await self.sendEdits() }
            group.addTask { try await self.followFeed() }
            group.addTask { try await self.followSettings() }
            while try await group.next() != nil {}
        }
    }

    // MARK: - The state

    /// Writes `record` to the journal and, once it is on disk, applies it.
    private func record(_ record: SyncRecord) throws {
        try self.record([record])
    }

    /// Writes `records` to the journal in one write (all or none of them
    /// durable) and, once they are on disk, applies them.
    private func record(_ records: [SyncRecord]) throws {
        guard !records.isEmpty else { return }
        try journal.record(records)
    }

    /// After a record that shortened the queue: the journal rewritten when
    /// most of it is history. A failure leaves the journal as it was and
    /// is tried again after the next acknowledgement.
    private func compact() {
        try? journal.compactIfDue()
    }

    // MARK: - Failures

    /// What a failed attempt means for the loop that made it.
    enum Failure {
        /// The box cannot be reached (no answer, or a certificate of
        /// another network's): back off, say `unreachable`.
        case away
        /// The box answered but cannot take this now: back off up to 10
        /// minutes, say `deferred`; a new change or `syncNow()` tries at once.
        case deferral
        /// No retry mends it: the loops end.
        case fatal
    }

    /// `error`'s meaning for the uploads (`settings` false) or the settings edits.
    static func failure(_ error: ClientError, settings: Bool) -> Failure {
        switch error.code {
        case .untrusted: return .away
        case .unavailable:
            guard let status = error.status else { return .away }
            return status == 429 || settings ? .deferral : .away
        // A box without the per-field merge cannot take an edit until it is updated.
        case .badAnswer where settings: return .deferral
        default: return .fatal
        }
    }

    // MARK: - Sending uploads

    /// The uploads in the order they were queued, and the wake-up count
    /// they were taken at.
    /// The first of them the client can have in flight at once, their
    /// bodies read from the journal now, so that memory follows them, not
    /// the queue.
    private func queuedUploads() throws -> ([SyncQueue.Upload], UInt64) {
        let seen = work.count
        let limits = client.configuration.limits, inFlight = max(1, client.configuration.uploadsInFlight)
        let uploads = queue.first(limits.maxItems * inFlight, bodyBytes: limits.maxRequestBytes * inFlight)
        return (try journal.load(uploads), seen)
    }

    /// The uploading side of `run()` (`sending`).
    private nonisolated func sendUploads() async throws {
        try await sending(
            .uploads, woken: work, settings: false, queued: { try await self.queuedUploads() },
            send: { uploads in
                try await self.send(uploads).map { deferred in { .deferred(deferred.ids, error: deferred.error, retryIn: $0) } }
            },
            deferred: { uploads, error, delay in .deferred(uploads.map(\.item.id), error: error, retryIn: delay) })
    }

    /// One sending loop (the uploads, the settings edits), on its own:
    /// what is queued, sent while there is any; a wait on `woken` when
    /// nothing is; its own backoff while the box is away, and a longer one
    /// (up to 10 minutes) for what the box deferred, which `woken` (a new
    /// change, `syncNow()`, the network's return) cuts short. `send`
    /// returns the event for what the box deferred of a batch it answered.
    private nonisolated func sending<Batch: Collection>(
        _ loop: IdleWatch.Loop, woken: Wakeup, settings: Bool, queued: () async throws -> (Batch, UInt64),
        send: (Batch) async throws -> ((Duration) -> Event)?, deferred: (Batch, ClientError, Duration) -> Event
    ) async throws {
        var away = Backoff(client.configuration.retry)
        var deferral = Backoff.deferral(client.configuration.retry)
        while true {
            try await network.waitOpen()
            let (batch, seen) = try await queued()
            if batch.isEmpty {
                idle.set(loop, true)
                await woken.wait(after: seen)
                try Task.checkCancellation()
                continue
            }
            idle.set(loop, false)
            let delay: Duration
            do {
                guard let partly = try await send(batch) else {
                    away.succeeded()
                    deferral.succeeded()
                    continue
                }
                away.succeeded()
                delay = deferral.failed()
                emitter.yield(partly(delay))
            } catch let error as ClientError {
                switch Self.failure(error, settings: settings) {
                case .fatal: throw error
                case .away:
                    guard network.isOpen else { continue }
                    let delay = away.failed()
                    await lost(error, retryIn: delay)
                    try await client.pause(delay)
                    continue
                case .deferral:
                    away.succeeded()
                    delay = deferral.failed()
                    emitter.yield(deferred(batch, error, delay))
                }
            }
            idle.set(loop, true)
            try await woken.sleep(for: delay) { try await self.client.pause($0) }
        }
    }

    /// Sends one round of uploads; each answer is recorded before the next
    /// request's (the acknowledged leave the queue, durably). Returns the
    /// uploads the box could not take now (507), to send again after a
    /// backoff.
    private nonisolated func send(_ uploads: [SyncQueue.Upload]) async throws -> (ids: [MessageID], error: ClientError)? {
        let outcomes = try await client.upload(uploads.map(\.item)) { range, outcomes in
            try await acknowledge(Array(uploads[range]), Array(outcomes))
        }
        var deferred: [MessageID] = []
        var reason: ClientError?
        for (upload, outcome) in zip(uploads, outcomes) {
            guard case .rejected(let status, let error) = outcome, !Self.refuses(status) else { continue }
            deferred.append(upload.item.id)
            reason = reason ?? .refused(status: status, error: error)
        }
        return reason.map { (deferred, $0) }
    }

    /// An upload's status that refuses the change itself (400, 413), which
    /// no retry mends: it leaves the queue. A 5xx (507: the box is full)
    /// keeps it queued.
    private static func refuses(_ status: Int) -> Bool { status < 500 }

    /// Records what the box answered for `uploads`: those it holds, or
    /// refused, leave the queue (one record, synced), then the events.
    private func acknowledge(_ uploads: [SyncQueue.Upload], _ outcomes: [UploadOutcome]) throws {
        reached()
        var done: [Int64] = []
        var held: [SyncQueue.Upload] = []
        var stored: [MessageID] = []
        var refusals: [Refusal] = []
        var number = queue.lastNumber
        for (upload, outcome) in zip(uploads, outcomes) {
            switch outcome {
            case .stored, .deleted:
                stored.append(upload.item.id)
                held.append(upload)
            case .conflict(let current):
                number += 1
                refusals.append(Refusal(
                    item: upload.item, status: 409,
                    reason: "the box holds version \(current.version) of \(upload.item.id), newer than this one", current: current,
                    number: number))
            case .rejected(let status, let error):
                guard Self.refuses(status) else { continue }
                number += 1
                refusals.append(Refusal(item: upload.item, status: status, reason: error, number: number))
            }
            done.append(upload.number)
        }
        guard !done.isEmpty else { return }
        let refused = refusals.map { SyncQueue.Refused(number: $0.number, change: .upload($0.item), status: $0.status, reason: $0.reason) }
        // The sent log first: a kill between the two sends these again, never forgets them.
        try sent.record(held)
        try record([.done(done)] + (refused.isEmpty ? [] : [.refused(refused)]))
        if !stored.isEmpty { emitter.yield(.uploaded(stored)) }
        if !refusals.isEmpty { emitter.yield(.refused(refusals)) }
        compact()
    }

    // MARK: - Sending settings edits

    /// One merge: the members edited at one time.
    typealias EditGroup = (at: Timestamp.Micros, members: [(name: String, edit: SyncQueue.Edit)])

    /// The settings edits grouped by edit time, oldest first, and the
    /// wake-up count they were taken at.
    private func queuedEdits() -> ([EditGroup], UInt64) {
        let seen = edited.count
        let byTime = Dictionary(grouping: queue.edits.sorted { $0.key < $1.key }) { $0.value.at }
        return (byTime.keys.sorted().map { at in (at: at, members: byTime[at]!.map { (name: $0.key, edit: $0.value) }) }, seen)
    }

    /// The settings side of `run()` (`sending`): a settings document the
    /// box cannot merge holds up no upload.
    private nonisolated func sendEdits() async throws {
        try await sending(
            .edits, woken: edited, settings: true, queued: { await self.queuedEdits() },
            send: { groups in
                for group in groups { try await self.send(group) }
                return nil
            },
            deferred: { groups, error, delay in
                .deferred(settings: groups.flatMap { $0.members.map(\.name) }, error: error, retryIn: delay)
            })
    }

    /// Sends one group of edits as a per-field merge and records the answer.
    private nonisolated func send(_ group: EditGroup) async throws {
        let names = group.members.map(\.name)
        let numbers = Dictionary(uniqueKeysWithValues: group.members.map { ($0.name, $0.edit.number) })
        let fields = JSONText(.object(JSONObject(uniqueMembers: group.members.map { JSONMember($0.name, $0.edit.value) })))
        do {
            let merge = try await client.patchSettings(fields: fields, editedAt: BoxClient.date(group.at))
            try await settled(numbers, .settingsMerged(names, settings: merge.settings, kept: merge.kept), settings: merge.settings)
        } catch let error as ClientError where error.code == .refused && [400, 409, 413].contains(error.status ?? 0) {
            let members = group.members.map { JSONMember($0.name, $0.edit.value) }
            try await settled(numbers, .settingsRefused(names, error: error), settings: nil, refused: (group.at, members, error))
        }
    }

    /// Records that the settings edits `numbers` left the queue (and the
    /// refusal to keep, when the box refused them), then `event`.
    private func settled(
        _ numbers: [String: Int64], _ event: Event, settings: BoxSettings?,
        refused: (at: Timestamp.Micros, members: [JSONMember], error: ClientError)? = nil
    ) throws {
        reached()
        let refusal = refused.map {
            SyncQueue.Refused(
                number: queue.lastNumber + 1, change: .edit(at: $0.at, members: $0.members), status: $0.error.status ?? 0,
                reason: $0.error.detail)
        }
        try record([.editsDone(numbers)] + (refusal.map { [.refused([$0])] } ?? []))
        if let settings { boxSettings = .some(settings) }
        emitter.yield(event)
        compact()
    }

    // MARK: - Following

    /// The feed into `store` with waits, each page with its anchor in one
    /// step, the 410 handled (`BoxClient.apply(into:…follow:)`, the loop of
    /// `sync(into:)`); a box away before the first wait is backed off.
    private nonisolated func followFeed() async throws {
        var away = Backoff(client.configuration.retry)
        while true {
            try await network.waitOpen()
            do {
                _ = try await client.apply(
                    into: store, excludingOwnWrites: excludingOwnWrites, follow: true,
                    // Queued before the store saves the new anchor: a kill in between reads again and finds them.
                    beforeEach: { page in if let held = page.heldVersions { try await self.resendLost(held) } }
                ) { page, _ in
                    away.succeeded()
                    await applied(page)
                    if !page.hasMore { idle.set(.feed, true) }
                }
            } catch let error as ClientError where Self.failure(error, settings: false) == .away {
                idle.set(.feed, false)
                guard network.isOpen else { continue }
                let delay = away.failed()
                await lost(error, retryIn: delay)
                try await client.pause(delay)
            }
        }
    }

    /// The box's settings as they change (waits), each an event.
    private nonisolated func followSettings() async throws {
        var away = Backoff(client.configuration.retry)
        var known: BoxSettings?
        while true {
            try await network.waitOpen()
            do {
                for try await settings in client.settingsUpdates(after: known) {
                    away.succeeded()
                    known = settings
                    await sawSettings(settings)
                }
            } catch let error as ClientError where Self.failure(error, settings: false) == .away {
                guard network.isOpen else { continue }
                let delay = away.failed()
                await lost(error, retryIn: delay)
                try await client.pause(delay)
            }
        }
    }

    /// After a full read that followed a 410 saying the box may have lost
    /// acknowledged writes: queues again, at the version acknowledged, each
    /// change the sent log holds that the box lacks (`held`: every id it
    /// holds, with its version): a put it does not hold, or holds at a lower
    /// version; a deletion of an id it holds again. An id with a change of
    /// the app's queued is left to that change. They are queued a batch at a
    /// time, their bodies read from the sent log for each batch.
    private func resendLost(_ held: [MessageID: Int64]) throws {
        let lost = try sent.newest().entries.values.filter { entry in
            guard queue.uploads[entry.id] == nil else { return false }
            guard let version = entry.version else { return held[entry.id] != nil }
            return held[entry.id].map { $0 < version } ?? true
        }.sorted { $0.number < $1.number }
        guard !lost.isEmpty else { return }
        var next = 0
        while next < lost.count {
            let batch = lost[next..<min(next + SyncJournal.compactedRecordItems, lost.count)]
            next = batch.endIndex
            var number = queue.lastNumber
            let uploads = try sent.load(Array(batch)).map { upload in
                number += 1
                return SyncQueue.Upload(number: number, item: upload.item)
            }
            try record(.enqueue(uploads))
        }
        idle.set(.uploads, false)
        work.fire()
    }

    private func sawSettings(_ settings: BoxSettings?) {
        reached()
        boxSettings = .some(settings)
        emitter.yield(.boxSettings(settings))
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
