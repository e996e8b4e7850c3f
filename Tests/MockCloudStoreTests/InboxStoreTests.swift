import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The inbox store alone, without HTTP: its feed, its commit protocol after
/// a crash between the two steps of a write, and compaction, with a reader
/// following its anchor across it.
@Suite struct InboxStoreTests {
    let data: TemporaryDirectory
    let key = UserKey("u1")!
    /// The store's clock: one microsecond a call, from a fixed instant.
    final class Clock: @unchecked Sendable {
        var now: Timestamp.Micros = 1_779_000_000_000_000
    }
    let clock = Clock()

    init() throws {
        data = try TemporaryDirectory()
    }

    func store(compactAt minimum: Int = 1024, horizon: Int64 = 30 * 86400) -> InboxStore {
        var settings = InboxSettings()
        settings.compactionMinimumRecords = minimum
        settings.tombstoneHorizonSeconds = horizon
        settings.minimumFreeBytes = 0
        let clock = self.clock
        return InboxStore(root: data.path, key: key, settings: settings, clock: {
            clock.now += 1
            return clock.now
        })
    }

    func id(_ text: String) -> MessageID { MessageID(text)! }

    func body(_ n: Int) -> JSONValue {
        var object = JSONObject()
        object["n"] = .number(String(n))
        return .object(object)
    }

    /// Every page from `anchor` on: (live id → (version, seq), deleted ids, last anchor).
    func read(_ store: InboxStore, from anchor: Anchor? = nil, limit: Int = 2,
              into start: [String: (Int64, Int64)] = [:]) throws -> ([String: (Int64, Int64)], Set<String>, Anchor) {
        var live = start
        var deleted: Set<String> = []
        var anchor = anchor
        while true {
            let page = try store.changes(after: anchor, limit: limit, excludingSource: nil)
            for message in page.page.messages { live[message.id.rawValue] = (message.version, message.seq) }
            for gone in page.deleted {
                live[gone.id.rawValue] = nil
                deleted.insert(gone.id.rawValue)
            }
            anchor = page.anchor
            if !page.hasMore { return (live, deleted, page.anchor) }
        }
    }

    @Test func theFeedListsEachIdOnceInItsLatestStateWithRisingSeqs() throws {
        let store = store()
        _ = try store.put(id("a"), version: 1, source: nil, body: body(1))
        _ = try store.put(id("b"), version: 1, source: nil, body: body(2))
        _ = try store.put(id("a"), version: 2, source: nil, body: body(3))
        #expect(try store.delete(id("b"), source: nil))
        let (live, deleted, anchor) = try read(store)
        #expect(live.mapValues { $0.0 } == ["a": 2])
        #expect(live["a"]?.1 == 3)
        #expect(deleted == ["b"])
        #expect(anchor.seq == 4)
    }

    @Test func aWriteThatDiedBetweenItsRecordAndItsFileLeavesTheOldStateAndANewSeqForTheNext() throws {
        let store = store()
        _ = try store.put(id("a"), version: 1, source: nil, body: body(1))
        // A writer killed after its record: the log says seq 2 for a, the file still holds seq 1.
        let logPath = data.file("inbox/u1/changes.log")
        let record = ChangeLog.encode(ChangeRecord(seq: 2, deleted: false, live: 1, id: id("a")))
        let fd = try Sys.open(logPath, .writeOnly | .append)
        try Sys.writeAll(fd, record)
        Sys.close(fd)
        let (live, _, anchor) = try read(store)
        #expect(live.mapValues { $0.0 } == ["a": 1])
        #expect(anchor.seq == 2)  // the reader passes the dead record
        // The next write gets a seq above it, and a reader from that anchor sees it.
        guard case .replaced(let replaced) = try store.put(id("a"), version: 2, source: nil, body: body(2)) else {
            Issue.record("not a replacement")
            return
        }
        #expect(replaced.envelope.seq == 3)
        let (after, _, _) = try read(store, from: anchor, into: live)
        #expect(after.mapValues { $0.0 } == ["a": 2])
    }

    @Test func compactionDropsSupersededRecordsAndOldTombstonesAndKeepsEverySeq() throws {
        let store = store(compactAt: 4, horizon: 0)
        for n in 0..<3 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        _ = try store.put(id("m0"), version: 2, source: nil, body: body(10))
        #expect(try store.delete(id("m1"), source: nil))
        let (before, _, anchorBefore) = try read(store)
        try store.upkeep()
        let log = try #require(try ChangeLog.openForReading(data.file("inbox/u1/changes.log")))
        defer { log.close() }
        #expect(log.count == 2)  // m0 at v2 and m2; m0's first record and m1's tombstone are gone
        #expect(try log.lastSeq() == anchorBefore.seq)
        #expect(!data.entries("inbox/u1/messages").contains("m1.json"))
        let (after, _, _) = try read(store)
        #expect(after.mapValues { $0.0 } == before.mapValues { $0.0 })
        // The next write's seq is still above every seq shown.
        guard case .created(let next) = try store.put(id("m9"), version: 1, source: nil, body: body(9)) else {
            Issue.record("not created")
            return
        }
        #expect(next.envelope.seq == anchorBefore.seq + 1)
    }

    @Test func aReaderFollowingItsAnchorAcrossACompactionMissesNothing() throws {
        let store = store(compactAt: 4, horizon: 30 * 86400)
        for n in 0..<4 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        let (seen, _, anchor) = try read(store)
        _ = try store.put(id("m0"), version: 2, source: nil, body: body(10))
        #expect(try store.delete(id("m2"), source: nil))
        _ = try store.put(id("m4"), version: 1, source: nil, body: body(4))
        try store.upkeep()
        let (followed, deleted, _) = try read(store, from: anchor, into: seen)
        let (whole, _, _) = try read(store)
        #expect(followed.mapValues { $0.0 } == whole.mapValues { $0.0 })
        #expect(deleted == ["m2"])  // the tombstone is within the horizon: kept, and told
    }

    @Test func anAnchorFromBeforeACompactionThatDroppedADeletionIsGone() throws {
        let store = store(compactAt: 4, horizon: 0)
        for n in 0..<3 { _ = try store.put(id("m\(n)"), version: 1, source: nil, body: body(n)) }
        let (_, _, anchor) = try read(store)
        #expect(try store.delete(id("m1"), source: nil))
        _ = try store.put(id("m3"), version: 1, source: nil, body: body(3))
        try store.upkeep()
        #expect {
            _ = try store.changes(after: anchor, limit: 10, excludingSource: nil)
        } throws: { error in
            if case .anchorNotAnswerable? = error as? InboxError { return true }
            return false
        }
    }
}
