import MockCloudJSON
import MockCloudSystem

/// A key's inbox: `<data>/inbox/<key>/messages/<id>.json` holds each message's
/// latest state (atomic writes), `<data>/inbox/<key>/changes.log` the order of
/// changes (see `ChangeLog`). Every change takes the key's exclusive lock,
/// appends its record (durable) and then replaces the message file; feed
/// readers take the lock shared, so a message is visible only with its final seq.
package struct InboxStore: Sendable {
    package let root: String
    package let key: UserKey
    package let settings: InboxSettings
    let clock: @Sendable () -> Timestamp.Micros
    /// Each message's latest state, with its MAC sidecar when signing is on.
    let messages: DocumentFolder
    /// The route: the folder in the data directory, the lock and the MACs.
    static let route = Route.inbox

    package init(root: String, key: UserKey, settings: InboxSettings = InboxSettings(), integrity: Integrity = .off,
                 clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now) {
        self.root = root
        self.key = key
        self.settings = settings
        self.clock = clock
        messages = DocumentFolder(directory: Sys.path(root, "/", Self.route.name, "/", key.rawValue, "/messages"), integrity: integrity)
    }

    package var directory: String { Sys.path(root, "/", Self.route.name, "/", key.rawValue) }
    package var messagesDirectory: String { messages.directory }
    var logPath: String { Sys.path(directory, "/changes.log") }

    private func fileName(_ id: MessageID) -> String { Sys.path(id.rawValue, ".json") }

    private func place(_ id: MessageID) -> DocumentPlace { DocumentPlace(route: Self.route, key: key, id: id) }

    /// The stored state of `id`, verified: the envelope, a tombstone, or `nil`.
    package func load(_ id: MessageID) throws -> Envelope? {
        guard let bytes = try messages.read(fileName(id), at: place(id)) else { return nil }
        guard let envelope = Envelope(bytes: bytes), envelope.id == id else {
            throw InboxError.damagedMessage(path: messagesDirectory + "/" + fileName(id))
        }
        return envelope
    }

    /// How a PUT ended.
    package enum PutOutcome: Equatable {
        /// No message had this id (or only a tombstone): 201.
        case created(Envelope)
        /// A lower version, or the same version with another body: 200, new seq.
        case replaced(Envelope)
        /// The same version and body: a retry, nothing written.
        case unchanged(Envelope)
    }

    /// Stores `body` under `id` with the sync version rules of HealthKit.
    package func put(_ id: MessageID, version: Int64, source: String?, body: JSONValue) throws -> PutOutcome {
        try changing { log in
            let current = try load(id)
            if let current, !current.isTombstone {
                if version < current.version { throw InboxError.lowerVersion(incoming: version, current: current) }
                if version == current.version, current.body.map(JSONPrinter.compact) == JSONPrinter.compact(body) {
                    return .unchanged(current)
                }
            }
            let isNew = current?.isTombstone ?? true
            let live = try liveCount(log) + (isNew ? 1 : 0)
            if isNew && live > settings.maxMessages { throw InboxError.inboxFull(limit: settings.maxMessages) }
            var envelope = Envelope(
                id: id, version: version, seq: try log.lastSeq() + 1, source: source,
                serverReceivedAt: Timestamp.format(clock()), body: body)
            envelope.stored = envelope.bytes  // printed once, for the file and the answer
            try commit(envelope, replacing: current, live: live, log: &log)
            return isNew ? .created(envelope) : .replaced(envelope)
        }
    }

    /// Replaces a live message with a tombstone; false when there was none.
    package func delete(_ id: MessageID, source: String?) throws -> Bool {
        // Nothing to delete: answer without creating an inbox on disk.
        guard let seen = try load(id), !seen.isTombstone else { return false }
        return try changing { log in
            guard let current = try load(id), !current.isTombstone else { return false }
            let tombstone = Envelope(
                id: id, version: current.version, seq: try log.lastSeq() + 1, source: source,
                serverReceivedAt: Timestamp.format(clock()), body: nil)
            try commit(tombstone, replacing: current, live: try liveCount(log) - 1, log: &log)
            return true
        }
    }

    /// The changes after `anchor`, oldest first, each id once in its latest state.
    package func changes(after anchor: Anchor, limit: Int, excludingSource excluded: String?) throws -> FeedPage {
        try KeyLock.withLock(root: root, route: Self.route, key: key, shared: true) {
            guard let log = try ChangeLog.openForReading(logPath) else {
                if anchor.seq != 0 { throw InboxError.anchorNotAnswerable(reason: "anchor is newer than anything stored") }
                return FeedPage(messages: [], deleted: [], anchor: .beginning, hasMore: false)
            }
            defer { log.close() }
            return try page(log, after: anchor, limit: limit, excluding: excluded)
        }
    }

    private func page(_ log: ChangeLog, after anchor: Anchor, limit: Int, excluding excluded: String?) throws -> FeedPage {
        let header = log.header
        if anchor.seq != 0 {
            if anchor.generation != header.generation {
                throw InboxError.anchorNotAnswerable(reason: "anchor belongs to an inbox that no longer exists")
            }
            if anchor.seq > (try log.lastSeq()) || anchor.epoch > header.epoch {
                throw InboxError.anchorNotAnswerable(reason: "anchor is newer than anything stored")
            }
            // Issued before a compaction that dropped deletions it had not seen.
            if anchor.epoch < header.epoch, anchor.seq < header.compactedThrough {
                throw InboxError.anchorNotAnswerable(reason: "anchor is older than the deletions this inbox still keeps")
            }
        }
        func position(_ seq: Int64) -> Anchor { Anchor(generation: header.generation, epoch: header.epoch, seq: seq) }
        var result = FeedPage(messages: [], deleted: [], anchor: position(anchor.seq), hasMore: false)
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
                if let state = try load(record.id), state.seq == record.seq,
                    state.isTombstone || excluded == nil || state.source != excluded
                {
                    if taken == limit {
                        result.hasMore = true
                        return result
                    }
                    if state.isTombstone { result.deleted.append(state) } else { result.messages.append(state) }
                    taken += 1
                }
                result.anchor = position(record.seq)
                index += 1
            }
        }
        return result
    }

    /// Runs a change under the key's exclusive lock with the log open for appending.
    private func changing<T>(_ body: (inout ChangeLog) throws -> T) throws -> T {
        try KeyLock.withLock(root: root, route: Self.route, key: key) {
            var log: ChangeLog
            do {
                try Sys.makeDirectories(messagesDirectory)
                log = try ChangeLog.openForWriting(logPath, directory: directory)
            } catch let error as SystemError {
                throw StorageError(error, .writing)
            }
            defer { log.close() }
            let result = try body(&log)
            try compactIfDue(&log)
            return result
        }
    }

    /// Live messages now: the live count of the latest change that took
    /// effect. Records after it are changes whose message file was never
    /// written (a crash between the two steps of `commit`).
    private func liveCount(_ log: ChangeLog) throws -> Int {
        var index = log.count - 1
        while index >= 0 {
            let record = try log.record(at: index)
            if let state = try load(record.id), state.seq == record.seq { return record.live }
            index -= 1
        }
        return 0
    }

    /// The log record first (durable), then the message file: a crash between
    /// the two leaves the old state visible and the new seq unused.
    private func commit(_ envelope: Envelope, replacing previous: Envelope?, live: Int, log: inout ChangeLog) throws {
        do {
            try log.append(ChangeRecord(seq: envelope.seq, deleted: envelope.isTombstone, live: live, id: envelope.id))
        } catch let error as SystemError {
            throw StorageError(error, .writing)
        }
        do {
            try messages.write(envelope.bytes, to: fileName(envelope.id), at: place(envelope.id), replacing: previous?.bytes)
        } catch {
            // The message file is unchanged (a full disk, say): take the record back.
            try? log.removeLast()
            throw error
        }
    }

    /// Rewrites the log with only the records that still name a message's
    /// latest state, dropping tombstones older than the horizon.
    private func compactIfDue(_ log: inout ChangeLog) throws {
        guard log.count >= max(settings.compactionMinimumRecords, 2 * log.header.records) else { return }
        try compact(&log)
    }

    /// Compacts now, whatever the log's size (also `mockcloud-admin`'s job).
    package func compact(_ log: inout ChangeLog) throws {
        let horizon = clock() - settings.tombstoneHorizonSeconds * 1_000_000
        var header = log.header
        header.lastSeq = try log.lastSeq()
        var kept: [ChangeRecord] = []
        var expired: [MessageID] = []
        var live = 0
        for record in try log.records(from: 0, count: log.count) {
            guard let state = try load(record.id), state.seq == record.seq else { continue }
            if state.isTombstone, let deletedAt = Timestamp.parse(state.serverReceivedAt), deletedAt <= horizon {
                expired.append(state.id)
                header.compactedThrough = max(header.compactedThrough, state.seq)
                continue
            }
            if !state.isTombstone { live += 1 }
            kept.append(ChangeRecord(seq: record.seq, deleted: state.isTombstone, live: live, id: record.id))
        }
        header.records = kept.count
        // Anchors issued before this compaction may have missed the deletions it drops.
        if !expired.isEmpty { header.epoch += 1 }
        try ChangeLog.rewrite(logPath, directory: directory, header: header, records: kept)
        for id in expired { _ = try messages.remove(fileName(id)) }
        log.close()
        log = try ChangeLog.openForWriting(logPath, directory: directory)
    }
}
