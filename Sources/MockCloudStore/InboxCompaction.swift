import MockCloudSystem
import MockCloudWire

/// The compaction of a key's change log, in steps that hold the key's lock
/// only for work bounded by the writes made meanwhile, never by the inbox's
/// size: readers and writers of the key go on while it reads every message.
///
/// 1. `snapshot` (under the key's exclusive lock, from `upkeep`): the log's
///    records so far and its header. No writer is at work then, so each of
///    those records' message files holds its final state or was never written.
/// 2. `build` (no lock of the key): reads those records and each one's
///    message file, and writes the records that still name a message's
///    state to a new log beside the live one, synced. Writers append to the
///    live log meanwhile, and readers read it.
/// 3. `swap` (under the key's exclusive lock, waiting for it): the records
///    appended since the snapshot are copied as they are, the header is
///    written, and the new log is synced and renamed over the live one.
/// 4. `removeExpired`: the files of the tombstones `build` dropped, a batch
///    under each hold of the lock, but none of an id written since the snapshot.
///
/// Why `build` may read without the lock: a message file's seq only grows,
/// and a write after the snapshot appends its record before it changes the
/// file. So the file `build` reads holds the seq it held at the snapshot
/// (that record is kept) or a later one, whose record `swap` copies. A record
/// kept whose file moved on after it was read is superseded, as records in
/// any log are: readers skip it, the next compaction drops it.
///
/// One compaction at a time per key: `upkeep` holds the inbox folder's own
/// lock throughout. A crash at any step leaves the live log as it was or
/// the new one whole; the new log's temporary file is replaced by the next
/// compaction and removed by the tidy-up.
struct InboxCompaction {
    let store: InboxStore
    /// The live log as `snapshot` opened it: its first `count` records are
    /// the snapshot (the count does not follow later appends).
    private let log: ChangeLog
    /// The new log's header: compactedThrough and epoch from `build`, lastSeq
    /// and records from `swap`.
    private(set) var header: ChangeLogHeader
    private var replacement: ChangeLog.Replacement?
    /// Ids whose tombstones `build` dropped; `swap` takes out those written since.
    private(set) var expired: [MessageID] = []
    /// Records in the new log when it was swapped in; later ones are later writes.
    private var swappedInCount = 0
    /// Records read, and their message files, per step of `build`.
    static let buildChunk = 1024
    /// Tombstone files `removeExpired` removes per hold of the key's lock.
    static let removalsPerLock = 64

    /// Step 1, for a caller that holds the key's exclusive lock: the
    /// compaction of the log as it is, or `nil` when none is due.
    static func snapshot(_ store: InboxStore) throws -> InboxCompaction? {
        guard let log = try ChangeLog.openForReading(store.logPath) else { return nil }
        do {
            guard store.isCompactionDue(log) else {
                log.close()
                return nil
            }
            var header = log.header
            header.lastSeq = try log.lastSeq()
            return InboxCompaction(store: store, log: log, header: header)
        } catch {
            log.close()
            throw error
        }
    }

    private init(store: InboxStore, log: ChangeLog, header: ChangeLogHeader) {
        self.store = store
        self.log = log
        self.header = header
    }

    /// Closes the snapshot's log and removes a new log not swapped in.
    mutating func close() {
        replacement?.abandon()
        replacement = nil
        log.close()
    }

    /// Step 2, without the key's lock: the new log's records, from the
    /// snapshot's records that still name a message's state, without the
    /// tombstones older than the horizon; written and synced.
    mutating func build() throws {
        let horizon = store.clock() - store.settings.tombstoneHorizonSeconds * 1_000_000
        var next = try ChangeLog.Replacement(of: store.logPath, directory: store.directory)
        do {
            var live = 0
            var index = 0
            while index < log.count {
                let records = try log.records(from: index, count: min(Self.buildChunk, log.count - index))
                var kept: [ChangeRecord] = []
                kept.reserveCapacity(records.count)
                for record in records {
                    // Unlocked: a signed file read while a writer replaces it is checked again under the lock.
                    guard let state = try store.read(record.id)?.envelope, state.seq == record.seq else { continue }
                    if state.isTombstone, let deletedAt = Timestamp.parse(state.serverReceivedAt), deletedAt <= horizon {
                        expired.append(state.id)
                        header.compactedThrough = max(header.compactedThrough, state.seq)
                        continue
                    }
                    if !state.isTombstone { live += 1 }
                    kept.append(ChangeRecord(seq: record.seq, deleted: state.isTombstone, live: live, id: record.id))
                }
                try next.append(kept)
                index += records.count
            }
            try next.sync()
        } catch {
            next.abandon()
            throw error
        }
        // Anchors issued before this compaction may have missed the deletions it drops.
        if !expired.isEmpty { header.epoch += 1 }
        replacement = next
    }

    /// Step 3, under the key's exclusive lock: the records written since the
    /// snapshot follow the new log's own, as they are (a dead one stays dead:
    /// its file never held its seq), and the new log replaces the live one.
    mutating func swap() throws {
        guard var next = replacement else { preconditionFailure("swap before build") }
        replacement = nil
        defer { next.abandon() }
        try KeyLock.withLock(root: store.root, store: InboxStore.storeName, key: store.key) {
            guard let current = try ChangeLog.openForReading(store.logPath) else {
                throw InboxError.damagedLog(path: store.logPath)
            }
            defer { current.close() }
            // Only a compaction replaces the log, and this is the only one
            // (the folder's lock); appends only add to the snapshot's records.
            guard try log.isStillInPlace(), current.count >= log.count else {
                throw InboxError.damagedLog(path: store.logPath)
            }
            let since = try current.records(from: log.count, count: current.count - log.count)
            header.lastSeq = max(header.lastSeq, try current.lastSeq())
            header.records = next.count + since.count
            try next.commit(header: header, then: since)
            swappedInCount = header.records
            if !since.isEmpty, !expired.isEmpty {
                let written = Set(since.map(\.id))
                expired.removeAll { written.contains($0) }
            }
        }
    }

    /// Step 4: removes the dropped tombstones' files, a batch under each hold
    /// of the key's lock, so that no writer of one of those ids is at work.
    /// Ids written since the swap keep their files. A failure leaves a
    /// tombstone no reader is told of, and a later write of its id creates it.
    mutating func removeExpired() throws {
        guard !expired.isEmpty else { return }
        var seen = swappedInCount
        while !expired.isEmpty {
            try KeyLock.withLock(root: store.root, store: InboxStore.storeName, key: store.key) {
                if let current = try ChangeLog.openForReading(store.logPath) {
                    defer { current.close() }
                    if current.count > seen {
                        let written = Set(try current.records(from: seen, count: current.count - seen).map(\.id))
                        expired.removeAll { written.contains($0) }
                        seen = current.count
                    }
                }
                for id in expired.prefix(Self.removalsPerLock) {
                    _ = try store.messages.remove(store.fileName(id), durably: false)
                }
                expired.removeFirst(min(Self.removalsPerLock, expired.count))
            }
        }
        do {
            try Sys.syncDirectory(store.messagesDirectory)
        } catch let error as SystemError {
            throw StorageError(error, .syncingAfterCommit)
        }
    }
}
