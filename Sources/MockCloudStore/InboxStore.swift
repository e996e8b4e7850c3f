import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// A key's inbox: `<data>/inbox/<key>/messages/<id>.json` holds each message's
/// latest state (atomic writes), `<data>/inbox/<key>/changes.log` the order of
/// changes (see `ChangeLog`). Every change takes the key's exclusive lock,
/// appends its record (durable) and then replaces the message file; feed
/// readers take the lock shared, so a message is visible only with its final seq.
///
/// The commit protocol: a record, once appended, is never taken back. It
/// takes effect when its message file holds its seq; a record whose file was
/// never written (a crash, a full disk, a failed fsync between the two
/// steps) is dead: readers skip it, its seq is never given out again, and
/// compaction drops it. So whatever a failure leaves, every message file a
/// GET can return is listed by the feed at its seq, and a later write gets a
/// seq above every seq a reader was shown.
package struct InboxStore: Sendable {
    package let root: String
    package let key: UserKey
    package let settings: InboxSettings
    let clock: @Sendable () -> Timestamp.Micros
    /// Each message's latest state, with its MAC sidecar when signing is on.
    let messages: DocumentFolder
    /// Its name: the folder in the data directory, the lock and the MACs.
    static let storeName = StoreName.inbox

    package init(root: String, key: UserKey, settings: InboxSettings = InboxSettings(), integrity: Integrity = .off,
                 clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now) {
        self.root = root
        self.key = key
        self.settings = settings
        self.clock = clock
        messages = DocumentFolder(directory: DataDirectory(root).messages(key), integrity: integrity)
    }

    package var directory: String { DataDirectory(root).inbox(key) }
    package var messagesDirectory: String { messages.directory }
    var logPath: String { DataDirectory(root).changeLog(key) }

    func fileName(_ id: MessageID) -> String { Sys.path(id.rawValue, ".json") }

    private func place(_ id: MessageID) -> DocumentPlace { DocumentPlace(store: Self.storeName, key: key, id: id) }

    /// The stored state of `id`, verified: the envelope, a tombstone, or
    /// `nil`. For a caller that holds the key's lock; `read` is for one that
    /// does not.
    package func load(_ id: MessageID) throws -> StoredEnvelope? {
        try envelope(id, bytes: try messages.read(fileName(id), at: place(id)))
    }

    /// `load` without the key's lock (GET /inbox/<id>): a message being
    /// replaced while it is read is checked again under the lock.
    package func read(_ id: MessageID) throws -> StoredEnvelope? {
        try envelope(id, bytes: try messages.read(fileName(id), at: place(id), unlockedIn: root))
    }

    private func envelope(_ id: MessageID, bytes: [UInt8]?) throws -> StoredEnvelope? {
        guard let bytes else { return nil }
        guard let envelope = StoredEnvelope(bytes: bytes), envelope.envelope.id == id else {
            throw InboxError.damagedMessage(path: messagesDirectory + "/" + fileName(id))
        }
        return envelope
    }

    /// How the write of one message ended.
    package enum PutOutcome: Equatable {
        /// No message had this id (or only a tombstone): a new one.
        case created(StoredEnvelope)
        /// A higher version, or the same version with another body: a new seq.
        case replaced(StoredEnvelope)
        /// The same version and body: a retry, nothing written.
        case unchanged(StoredEnvelope)
    }

    /// Stores `body` under `id` with the sync version rules of HealthKit.
    package func put(_ id: MessageID, version: Int64, source: DeviceID?, body: JSONValue) throws -> PutOutcome {
        switch try applyOne(.put(id, version: version, body: PrintedJSON(body)), source: source) {
        case .written(let outcome): return outcome
        case .deleted: preconditionFailure("a put answered as a deletion")
        case .refused(let error): throw error
        }
    }

    /// Replaces a live message with a tombstone; false when there was none.
    package func delete(_ id: MessageID, source: DeviceID?) throws -> Bool {
        // Nothing to delete: answer without creating an inbox on disk.
        guard let seen = try read(id), !seen.envelope.isTombstone else { return false }
        if case .deleted = try applyOne(.delete(id), source: source) { return true }
        return false
    }

    /// One change: a PUT or a DELETE of one message.
    package enum Change: Sendable {
        case put(MessageID, version: Int64, body: PrintedJSON)
        case delete(MessageID)

        package var id: MessageID {
            switch self {
            case .put(let id, _, _), .delete(let id): return id
            }
        }

        /// True for a deletion: it runs below the free-space floor, since it
        /// is how a user frees space.
        var isDeletion: Bool {
            if case .delete = self { return true }
            return false
        }
    }

    /// How one change ended.
    package enum ChangeOutcome {
        case written(PutOutcome)
        /// The tombstone a deletion left.
        case deleted(StoredEnvelope)
        /// Nothing written for this change: no message to delete, a lower
        /// version, a full inbox.
        case refused(InboxError)
    }

    /// A single PUT or DELETE: `apply` for one change, without its tables
    /// (each new generic container costs a process its description at run
    /// time, and a single write would pay for every one).
    private func applyOne(_ change: Change, source: DeviceID?) throws -> ChangeOutcome {
        try changing(onlyDeleting: change.isDeletion) { log in
            let current = try load(change.id)
            var outcome = decide(change, current: current)
            guard outcome.written != nil else { return outcome }
            var live = try liveCount(log)
            guard let record = stamp(&outcome, current: current, seq: try log.lastSeq() + 1, source: source,
                                     at: Timestamp.format(clock()), live: &live),
                let envelope = outcome.written
            else { return outcome }
            try commit(records: 1, log: &log) { log in try log.append(record) } files: {
                try messages.write(envelope.bytes, to: fileName(change.id), at: place(change.id),
                                   replacing: current?.bytes)
            }
            return outcome
        }
    }

    /// Applies `changes` in order, each as its own PUT or DELETE would
    /// (`decide` and `stamp`, as for a single one; a later change of the same
    /// id sees the earlier one), under one lock: one append of all their log
    /// records (one fdatasync), then every message file that changed, written
    /// once in its final state and synced together. A crash leaves each
    /// message old or new, never torn; readers, who share the lock, see none
    /// of the changes or all of them.
    package func apply(_ changes: [Change], source: DeviceID?) throws -> [ChangeOutcome] {
        let onlyDeleting = changes.allSatisfy { $0.isDeletion }
        // Only deletions, and no inbox: answer without creating one on disk.
        if onlyDeleting, (try ChangeLog.openForReading(logPath)).map({ $0.close() }) == nil {
            return changes.map { _ in .refused(.noMessage) }
        }
        return try changing(onlyDeleting: onlyDeleting) { log in
            var states: [MessageID: StoredEnvelope?] = [:]  // after the changes so far
            var stored: [MessageID: StoredEnvelope?] = [:]  // on disk before this request
            var order: [MessageID] = []  // ids changed, first change first
            var records: [ChangeRecord] = []
            var outcomes: [ChangeOutcome] = []
            var live = try liveCount(log)
            var seq = try log.lastSeq()
            let receivedAt = Timestamp.format(clock())
            for change in changes {
                let id = change.id
                let current: StoredEnvelope?
                if let state = states[id] {
                    current = state
                } else {
                    current = try load(id)
                    stored[id] = .some(current)
                }
                var outcome = decide(change, current: current)
                if let record = stamp(&outcome, current: current, seq: seq + 1, source: source, at: receivedAt,
                                      live: &live) {
                    seq += 1
                    records.append(record)
                    if states[id] == nil { order.append(id) }  // its first change that writes
                    states[id] = .some(outcome.written)
                }
                outcomes.append(outcome)
            }
            let documents = order.map { id in
                DocumentWrite(name: fileName(id), bytes: states[id]!!.bytes, place: place(id),
                              previous: stored[id]!?.bytes)
            }
            try commit(records: records.count, log: &log) { log in try log.append(records) } files: {
                try messages.write(documents)
            }
            return outcomes
        }
    }

    /// What one change does to `current`, as its own request decides it: the
    /// new state (its seq, source and time set by `stamp`), or why not.
    private func decide(_ change: Change, current stored: StoredEnvelope?) -> ChangeOutcome {
        let current = stored?.envelope
        let isLive = current.map { !$0.isTombstone } ?? false
        switch change {
        case .delete(let id):
            guard let current, isLive else { return .refused(.noMessage) }
            return .deleted(StoredEnvelope(Envelope(id: id, version: current.version, seq: 0, source: nil,
                                                    serverReceivedAt: "", body: nil)))
        case .put(let id, let version, let body):
            if let stored, let current, isLive {
                if version < current.version { return .refused(.lowerVersion(incoming: version, current: current)) }
                if version == current.version, current.content.map(JSONPrinter.compact) == body.compact {
                    return .written(.unchanged(stored))
                }
            }
            let envelope = StoredEnvelope(id: id, version: version, body: body)
            return .written(isLive ? .replaced(envelope) : .created(envelope))
        }
    }

    /// Makes a decided change final: refuses a new message past the limit,
    /// stamps the envelope with `seq`, `source` and the time, counts the live
    /// messages, and returns the log record to append (`nil`: nothing to write).
    private func stamp(
        _ outcome: inout ChangeOutcome, current: StoredEnvelope?, seq: Int64, source: DeviceID?, at receivedAt: String,
        live: inout Int
    ) -> ChangeRecord? {
        guard var envelope = outcome.written else { return nil }
        let wasLive = current.map { !$0.envelope.isTombstone } ?? false
        if !wasLive && live + 1 > settings.maxMessages {
            outcome = .refused(.inboxFull(limit: settings.maxMessages))
            return nil
        }
        envelope.stamp(seq: seq, source: source, receivedAt: receivedAt)
        outcome.written = envelope
        let isTombstone = envelope.envelope.isTombstone
        if isTombstone { live -= 1 } else if !wasLive { live += 1 }
        return ChangeRecord(seq: seq, deleted: isTombstone, live: live, id: envelope.envelope.id)
    }

    /// Refuses a symbolic link in place of the inbox's folders (`inbox`,
    /// `inbox/<key>`, `inbox/<key>/messages`): the files in them are opened
    /// with `O_NOFOLLOW`, but a linked folder would lead there from elsewhere.
    /// The route calls it once per request, before anything else.
    package func checkDirectories() throws {
        do {
            try Sys.checkFolders(under: root, Self.storeName.name, key.rawValue, DataDirectory.messagesFolder)
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
    }

    /// The changes after `anchor` (`nil`: from the beginning), oldest first,
    /// each id once in its latest state. An inbox that holds nothing has no
    /// lock file, and reading it creates none.
    package func changes(after anchor: Anchor?, limit: Int, excludingSource excluded: DeviceID?) throws -> StoredFeedPage {
        func empty() throws -> StoredFeedPage {
            if let anchor, anchor != .beginning {
                throw InboxError.anchorNotAnswerable(.ahead)
            }
            return StoredFeedPage(messages: [], deleted: [], anchor: .beginning, hasMore: false)
        }
        func read() throws -> StoredFeedPage {
            do {
                guard let log = try ChangeLog.openForReading(logPath) else { return try empty() }
                defer { log.close() }
                return try page(log, after: anchor, limit: limit, excluding: excluded)
            } catch let error as SystemError {
                throw StorageError(error, .reading)
            }
        }
        return try KeyLock.withExistingLock(root: root, store: Self.storeName, key: key, shared: true, read) {
            // No lock file: nothing stored, unless a first writer is at work
            // now (it makes the lock file before the log); then wait for it.
            // With neither there, the inbox was empty when the log was looked
            // for: answer that, and never open a log a first writer may be
            // filling now without the lock (its records' files are not in
            // place yet, and this reader's anchor would pass them).
            if !KeyLock.exists(root: root, store: Self.storeName, key: key), !Sys.exists(logPath) { return try empty() }
            return try KeyLock.withLock(root: root, store: Self.storeName, key: key, shared: true, read)
        }
    }

    /// `changes`, held until a change after `anchor` that the page would
    /// show commits, or `wait` ends (then the empty page, its anchor past any
    /// of the reader's own echoes it skipped). Changes already there, and an
    /// anchor the store cannot answer from (410), answer at once. With
    /// `excluded`, that device's own writes do not end the wait. No lock is
    /// held while it waits: it sleeps on the inbox's change log (the log is
    /// closed after writing, or renamed into place, once a change is in
    /// place) and reads again under the shared lock when woken.
    package func changes(after anchor: Anchor?, limit: Int, excludingSource excluded: DeviceID?,
                         waiting wait: WaitLimit) throws -> StoredFeedPage {
        var page = try changes(after: anchor, limit: limit, excludingSource: excluded)
        guard page.messages.isEmpty, page.deleted.isEmpty else { return page }
        var from = anchor
        try wait.waitForChange(of: logPath, under: root) {
            // Past what the last look skipped (the reader's own echoes).
            if page.anchor.seq > (from?.seq ?? 0) { from = page.anchor }
            page = try changes(after: from, limit: limit, excludingSource: excluded)
            return !page.messages.isEmpty || !page.deleted.isEmpty
        }
        return page
    }

    private func page(_ log: ChangeLog, after given: Anchor?, limit: Int, excluding excluded: DeviceID?) throws -> StoredFeedPage {
        let header = log.header
        // Every anchor is checked, the one an empty inbox hands out (`0.0.0`:
        // any generation, epoch 0) and one at seq 0 included: a reader that
        // saw nothing may still have missed a deletion compaction dropped.
        if let anchor = given {
            let handedOutEmpty = anchor.generation == Anchor.beginning.generation
            if handedOutEmpty ? anchor != .beginning : anchor.generation != header.generation {
                throw InboxError.anchorNotAnswerable(.replaced)
            }
            if anchor.seq > (try log.lastSeq()) || anchor.epoch > header.epoch {
                throw InboxError.anchorNotAnswerable(.ahead)
            }
            // Issued before a compaction that dropped deletions it had not seen.
            if anchor.epoch < header.epoch, anchor.seq < header.compactedThrough {
                throw InboxError.anchorNotAnswerable(.compacted)
            }
        }
        let anchor = given ?? .beginning
        func position(_ seq: Int64) -> Anchor { Anchor(generation: header.generation, epoch: header.epoch, seq: seq) }
        var result = StoredFeedPage(messages: [], deleted: [], anchor: position(anchor.seq), hasMore: false)
        var index = try log.firstIndex(after: anchor.seq)
        var taken = 0
        // Superseded records and the reader's own echoes fill no slot but the
        // anchor moves past them; the scan goes on until one more entry than
        // the page holds is seen, so that hasMore is exact.
        // The first batch of records is one more than the page (all a page
        // of live messages needs); when superseded ones make the loop read
        // on, each batch is twice the last, up to 64.
        var chunk = min(64, limit + 1)
        while index < log.count {
            defer { chunk = min(64, chunk * 2) }
            for record in try log.records(from: index, count: chunk) {
                if let stored = try load(record.id), stored.envelope.seq == record.seq,
                    stored.envelope.isTombstone || excluded == nil || stored.envelope.sourceText != excluded?.rawValue
                {
                    if taken == limit {
                        result.hasMore = true
                        return result
                    }
                    if stored.envelope.isTombstone {
                        result.deleted.append(Deletion(id: record.id, seq: record.seq))
                    } else {
                        result.messages.append(stored)
                    }
                    taken += 1
                }
                result.anchor = position(record.seq)
                index += 1
            }
        }
        return result
    }

    /// Runs a change under the key's exclusive lock with the log open for
    /// appending. The lock file stays while the log does. Below the free-space
    /// floor only deletions run. Compaction and the removal of what killed
    /// writers left are `upkeep`'s, after the answer.
    private func changing<T>(onlyDeleting: Bool = false, _ body: (inout ChangeLog) throws -> T) throws -> T {
        if !onlyDeleting { try FreeSpaceError.check(root, floor: settings.minimumFreeBytes) }
        let log = logPath
        // A new lock file means no writer was killed holding it: nothing to tidy.
        let tidy: (Bool) -> Void = { lockWasNew in if !lockWasNew { Self.tidyDue = true } }
        return try KeyLock.withLock(root: root, store: Self.storeName, key: key, holdsData: { Sys.exists(log) }, tidy: tidy) {
            var log: ChangeLog
            do {
                try Sys.makeDirectories(messagesDirectory)
                log = try ChangeLog.openForWriting(logPath, directory: directory)
            } catch let error as SystemError {
                throw StorageError(error, .writing)
            } catch let error as StorageError {
                // A new log made but not synced holds no message: nothing a reader sees changed.
                throw StorageError(error.cause, .writing)
            }
            defer {
                if isCompactionDue(log) { Self.compactionDue = true }
                log.close()
            }
            do {
                return try body(&log)
            } catch let error as SystemError {
                // A read of the log before the append (the append and the
                // files throw StorageError with their own phase).
                throw StorageError(error, .writing)
            }
        }
    }

    /// What this process's writes found due for `upkeep`. Process-wide, as
    /// a CGI process answers one request; a stale value only costs or saves
    /// work, never changes what upkeep does (it checks again under the lock).
    nonisolated(unsafe) private static var tidyDue = false
    nonisolated(unsafe) private static var compactionDue = false

    /// A new request begins in a process that answers many (a FastCGI
    /// worker): what the last one found due is its own upkeep's.
    package static func forgetUpkeepDue() {
        tidyDue = false
        compactionDue = false
    }

    /// Once the log holds the minimum and twice as many records as after its
    /// last compaction: O(1) compaction work per write.
    func isCompactionDue(_ log: ChangeLog) -> Bool {
        log.count >= max(settings.compactionMinimumRecords, 2 * log.header.records)
    }

    /// Tries of `upkeep` for the key's lock while readers hold it, 5 ms apart.
    static let upkeepTries = 20

    /// The inbox's upkeep, run after a write has answered (so that neither
    /// its latency nor its answer depends on it), one at a time per inbox
    /// (the inbox folder's own lock, taken without waiting: otherwise the
    /// next writer does it): compaction when due (`InboxCompaction`), and,
    /// every `KeyLock.tidyIntervalSeconds`, the removal of the temporary
    /// files killed writers left. Neither holds the key's lock for long:
    /// the messages folder is listed without it, and what the listing found
    /// is removed under it, where no writer is at work, so none is live. A
    /// failure leaves the inbox as it was, and the next write's upkeep tries
    /// again.
    ///
    /// `onlyIfDue`: skip it all unless a write of this process found it due
    /// (what the program does after each write; costs nothing otherwise).
    package func upkeep(onlyIfDue: Bool = false) throws {
        if onlyIfDue && !Self.tidyDue && !Self.compactionDue { return }
        try KeyLock.ifFolderFree(directory) {
            var tidy = false
            var compaction: InboxCompaction?
            // Readers waiting for a change (`?wait=`) wake on the write this
            // upkeep follows and take the shared lock the moment the writer
            // lets it go, just when the upkeep asks for it: a few short tries
            // more, or no write of a followed inbox would ever compact it.
            for _ in 0..<Self.upkeepTries {
                let ran = try KeyLock.ifFree(root: root, store: Self.storeName, key: key) { tidyDue in
                    tidy = tidyDue || Self.tidyDue
                    // The inbox folder holds a few names; no compaction is at work (the folder's lock).
                    if tidy { AtomicFile.removeTemporaries(in: directory) }
                    compaction = try InboxCompaction.snapshot(self)
                }
                if ran || !KeyLock.exists(root: root, store: Self.storeName, key: key) { break }
                Sys.sleep(milliseconds: 5)
            }
            if tidy { try removeTemporaryMessages() }
            guard var compaction else { return }
            defer { compaction.close() }
            try compaction.build()
            try compaction.swap()
            try compaction.removeExpired()
        }
    }

    /// The temporary files of the messages folder, listed without the key's
    /// lock (a long listing in a large inbox) and removed under it: those
    /// still there then are killed writers' (a live writer holds the lock).
    private func removeTemporaryMessages() throws {
        let names = AtomicFile.documentsWithTemporaries(in: messagesDirectory)
        guard !names.isEmpty else { return }
        try KeyLock.withLock(root: root, store: Self.storeName, key: key) {
            for name in names { AtomicFile.removeTemporary(of: name, in: messagesDirectory) }
        }
    }

    /// Live messages now: the live count of the latest change that took
    /// effect. Records after it are changes whose message file was never
    /// written (a crash between the two steps of `commit`).
    private func liveCount(_ log: ChangeLog) throws -> Int {
        var index = log.count - 1
        while index >= 0 {
            let record = try log.record(at: index)
            if let stored = try load(record.id), stored.envelope.seq == record.seq { return record.live }
            index -= 1
        }
        return 0
    }

    /// The log records first (durable: the commit point), then the message
    /// files. Once any message file is in place its records stay, whatever
    /// fails next (a reader may be shown them the moment the lock goes); a
    /// record whose file was not written is dead. Only a failure before any
    /// file a reader sees changed takes the records back, so that a refused
    /// write (a full disk) leaves the log as it was: no reader can have
    /// seen them, as the lock was held throughout.
    private func commit(
        records: Int, log: inout ChangeLog, _ append: (inout ChangeLog) throws -> Void, files write: () throws -> Void
    ) throws {
        guard records > 0 else { return }
        do {
            try append(&log)
        } catch let error as SystemError {
            throw StorageError(error, .writing)
        }
        do {
            try write()
        } catch let error as StorageError where error.phase == .writing {
            try? log.takeBack(records)
            throw error
        }
    }
}

extension InboxStore.ChangeOutcome {
    /// The envelope a change writes: the new state or the tombstone; `nil`
    /// for a retry (nothing written) or a refusal.
    fileprivate var written: StoredEnvelope? {
        get {
            switch self {
            case .written(.created(let envelope)), .written(.replaced(let envelope)), .deleted(let envelope):
                return envelope
            case .written(.unchanged), .refused: return nil
            }
        }
        set {
            guard let envelope = newValue else { return }
            switch self {
            case .written(.created): self = .written(.created(envelope))
            case .written(.replaced): self = .written(.replaced(envelope))
            case .deleted: self = .deleted(envelope)
            case .written(.unchanged), .refused: break
            }
        }
    }
}
