import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// Compaction's steps (`InboxCompaction`) with writes and reads between
/// them, as other processes make them while a compaction reads every
/// message without the key's lock; and a compaction stopped after each
/// step, as a crash stops it.
extension InboxStoreTests {
    var logPath: String { data.file("inbox/u1/changes.log") }

    /// Step 1, under the key's lock as `upkeep` takes it.
    func snapshot(_ store: InboxStore) throws -> InboxCompaction {
        var taken: InboxCompaction?
        try KeyLock.withLock(root: data.path, store: .inbox, key: key) { taken = try InboxCompaction.snapshot(store) }
        return try #require(taken, "compaction is due")
    }

    func logRecords() throws -> [ChangeRecord] {
        let log = try #require(try ChangeLog.openForReading(logPath))
        defer { log.close() }
        return try log.records(from: 0, count: log.count)
    }

    /// The state every GET answers (id → version and seq), for the ids given.
    func stored(_ store: InboxStore, _ ids: [String]) throws -> [String: (Int64, Int64)] {
        var state: [String: (Int64, Int64)] = [:]
        for name in ids {
            if let envelope = try store.read(id(name))?.envelope, !envelope.isTombstone { state[name] = (envelope.version, envelope.seq) }
        }
        return state
    }

    func same(_ a: [String: (Int64, Int64)], _ b: [String: (Int64, Int64)]) -> Bool {
        a.count == b.count && a.allSatisfy { entry in b[entry.key].map { $0 == entry.value } ?? false }
    }

    @Test func writesAndReadsDuringTheBuildStepGoOnAndTheSwapCatchesTheWritesUp() throws {
        let store = store(compactAt: 4)
        for n in 0..<4 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        let (_, _, before) = try read(store)
        var compaction = try snapshot(store)
        defer { compaction.close() }
        // Between the snapshot and the build: a replacement the build then
        // sees (its file holds a seq after the snapshot).
        _ = try store.put(id("m0"), version: 2, source: nil, body: body(10))
        try compaction.build()
        // Between the build and the swap: a new message, a replacement of a
        // message the build kept, a deletion; the lock is free, so each
        // answers, and a reader sees them on the live log.
        _ = try store.put(id("m9"), version: 1, source: nil, body: body(9))
        _ = try store.put(id("m1"), version: 2, source: nil, body: body(11))
        #expect(try store.delete(id("m2"), source: nil))
        let (seenDuring, deletedDuring, during) = try read(store, from: before)
        #expect(seenDuring.mapValues { $0.0 } == ["m0": 2, "m1": 2, "m9": 1])
        #expect(deletedDuring == ["m2"])
        let lastSeq = during.seq
        try compaction.swap()
        try compaction.removeExpired()

        // The new log: the build's records (m1, m2, m3: m0's was superseded
        // before it read it), then the four written since, as they are.
        let records = try logRecords()
        #expect(records.map(\.seq) == [2, 3, 4, 5, 6, 7, 8])
        #expect(records.suffix(4).map(\.id.rawValue) == ["m0", "m9", "m1", "m2"])
        #expect(try #require(try ChangeLog.openForReading(logPath)).header.records == 7)
        // Every reader ends with what every GET answers: a fresh one, one
        // from before the snapshot, one from the build step.
        let ids = ["m0", "m1", "m2", "m3", "m9"]
        let truth = try stored(store, ids)
        #expect(truth.mapValues { $0.0 } == ["m0": 2, "m1": 2, "m3": 1, "m9": 1])
        let (fresh, _, freshAnchor) = try read(store)
        #expect(same(fresh, truth))
        #expect(freshAnchor.seq == lastSeq)
        var (followed, _, _) = try read(store, from: before, into: [:])
        followed.merge(try stored(store, ["m3"])) { a, _ in a }  // m3 was seen before the anchor
        #expect(same(followed, truth))
        let (afterDuring, _, _) = try read(store, from: during, into: seenDuring)
        #expect(afterDuring.mapValues { $0.0 } == ["m0": 2, "m1": 2, "m9": 1])
        // The next write's seq is above every seq given out.
        guard case .created(let next) = try store.put(id("m5"), version: 1, source: nil, body: body(5)) else {
            Issue.record("not created")
            return
        }
        #expect(next.envelope.seq == lastSeq + 1)
    }

    @Test func aRecordTheBuildKeptWhoseMessageMovedOnIsSupersededNotShownTwice() throws {
        let store = store(compactAt: 4)
        for n in 0..<4 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        var compaction = try snapshot(store)
        defer { compaction.close() }
        try compaction.build()
        _ = try store.put(id("m3"), version: 2, source: nil, body: body(13))
        try compaction.swap()
        // m3's record from the build (seq 4) and its new one (seq 5): the feed shows it once, at 5.
        #expect(try logRecords().map(\.seq) == [1, 2, 3, 4, 5])
        let page = try store.changes(after: nil, limit: 100, excludingSource: nil)
        #expect(page.messages.map(\.envelope.id.rawValue) == ["m0", "m1", "m2", "m3"])
        #expect(page.messages.last?.envelope.seq == 5)
        // The next compaction drops the superseded record.
        for n in 0..<5 { _ = try store.put(id("n\(n)"), version: 1, source: nil, body: body(n)) }
        try store.upkeep()
        #expect(try logRecords().map(\.seq) == [1, 2, 3, 5, 6, 7, 8, 9, 10])
    }

    @Test func aDroppedTombstoneWrittenAgainBeforeTheSwapKeepsItsNewFile() throws {
        let store = store(compactAt: 4, horizon: 0)
        for n in 0..<3 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        #expect(try store.delete(id("m1"), source: nil))
        #expect(try store.delete(id("m2"), source: nil))
        var compaction = try snapshot(store)
        defer { compaction.close() }
        try compaction.build()
        #expect(compaction.expired.map(\.rawValue) == ["m1", "m2"])
        // m1 comes back while the build's result waits for the lock.
        guard case .created = try store.put(id("m1"), version: 1, source: nil, body: body(21)) else {
            Issue.record("not created")
            return
        }
        try compaction.swap()
        #expect(compaction.expired.map(\.rawValue) == ["m2"])
        try compaction.removeExpired()
        #expect(data.entries("inbox/u1/messages") == ["m0.json", "m1.json"])
        #expect(try stored(store, ["m0", "m1", "m2"]).mapValues { $0.0 } == ["m0": 1, "m1": 1])
        let page = try store.changes(after: nil, limit: 100, excludingSource: nil)
        #expect(page.messages.map(\.envelope.id.rawValue) == ["m0", "m1"])
        // The dropped deletions moved the epoch: an anchor from before them is gone.
        let header = try #require(try ChangeLog.openForReading(logPath)).header
        #expect(header.epoch == 1)
        #expect(header.compactedThrough == 5)
    }

    @Test func manyDroppedTombstonesAreRemovedInBatchesUnderTheLock() throws {
        let store = store(compactAt: 4, horizon: 0)
        let count = InboxCompaction.removalsPerLock * 2 + 5
        for n in 0..<count {
            _ = try store.put(id("d\(n)"), version: 1, source: nil, body: body(n))
            #expect(try store.delete(id("d\(n)"), source: nil))
        }
        _ = try store.put(id("kept"), version: 1, source: nil, body: body(0))
        try store.upkeep()
        #expect(data.entries("inbox/u1/messages") == ["kept.json"])
        #expect(try logRecords().map(\.id.rawValue) == ["kept"])
    }

    @Test func aSecondCompactionOfTheSameKeyDoesNotStartWhileOneRuns() throws {
        let store = store(compactAt: 4)
        for n in 0..<4 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        _ = try store.put(id("m0"), version: 2, source: nil, body: body(10))
        let before = data.bytes(of: "inbox/u1/changes.log")
        // Another process's upkeep holds the inbox folder's lock.
        let ran = try KeyLock.ifFolderFree(data.file("inbox/u1")) {
            try store.upkeep()
            #expect(data.bytes(of: "inbox/u1/changes.log") == before)
        }
        #expect(ran)
        try store.upkeep()
        #expect(try logRecords().map(\.seq) == [2, 3, 4, 5])
    }

    /// A compaction stopped after `steps` of its steps, as a crash stops it
    /// (no clean-up: its temporary stays), then the inbox read and written.
    @Test(arguments: [0, 1, 2, 3])
    func aCompactionStoppedAfterAnyStepLeavesAValidLogAndTheNextOneFinishes(steps: Int) throws {
        let store = store(compactAt: 4, horizon: 0)
        for n in 0..<3 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        _ = try store.put(id("m0"), version: 2, source: nil, body: body(10))
        #expect(try store.delete(id("m1"), source: nil))
        let (before, _, anchor) = try read(store)
        let logBefore = data.bytes(of: "inbox/u1/changes.log")
        var compaction = try snapshot(store)
        if steps >= 1 { try compaction.build() }
        if steps >= 2 { try compaction.swap() }
        if steps >= 3 { try compaction.removeExpired() }
        // Killed here: no close, so a built log not swapped in stays as the temporary.
        let temporary = data.entries("inbox/u1").contains(".~changes.log")
        #expect(temporary == (steps == 1))
        if steps < 2 {
            #expect(data.bytes(of: "inbox/u1/changes.log") == logBefore)
        }
        // m1's tombstone file goes only in the last step; either way the feed agrees with GET.
        #expect(data.entries("inbox/u1/messages").contains("m1.json") == (steps < 3))
        let (now, _, _) = try read(store)
        #expect(now.mapValues { $0.0 } == before.mapValues { $0.0 })
        // The anchor from before still answers: no deletion after it was dropped.
        let (onward, _, _) = try read(store, from: anchor, into: before)
        #expect(onward.mapValues { $0.0 } == before.mapValues { $0.0 })
        guard case .created(let m1) = try store.put(id("m1"), version: 1, source: nil, body: body(1)) else {
            Issue.record("m1 not created")
            return
        }
        #expect(m1.envelope.seq == anchor.seq + 1)
        // The next upkeep compacts (or finds the job done) and leaves no temporary.
        for n in 3..<8 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        try store.upkeep()
        #expect(!data.entries("inbox/u1").contains(".~changes.log"))
        let ids = (0..<8).map { "m\($0)" }
        let (after, _, _) = try read(store)
        #expect(same(after, try stored(store, ids)))
        #expect(try logRecords().count == 8)
    }
}
