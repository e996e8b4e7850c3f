import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxCompactionTests {
    static func settings(horizon: Int64) -> InboxSettings {
        var settings = InboxSettings()
        settings.compactionMinimumRecords = 8
        settings.tombstoneHorizonSeconds = horizon
        return settings
    }

    /// Eight changes: a, b and c written, a and b replaced, a replaced again,
    /// c deleted, a replaced a third time (seq 8): the eighth triggers compaction.
    static func writeEightChanges(_ inbox: InboxSandbox) {
        _ = inbox.put("a", #"{"v": 1}"#)
        _ = inbox.put("b", #"{"v": 1}"#)
        _ = inbox.put("c", #"{"v": 1}"#)
        _ = inbox.put("a", #"{"v": 2}"#)
        _ = inbox.put("b", #"{"v": 2}"#)
        _ = inbox.put("a", #"{"v": 3}"#)
        _ = inbox.delete("c")
        _ = inbox.put("a", #"{"v": 4}"#)
    }

    @Test func theLogGrowsUntilItHoldsTheMinimumNumberOfRecords() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        for i in 1...7 {
            _ = inbox.put("a", #"{"v": \#(i)}"#)
            #expect(inbox.logSize() == (i + 1) * ChangeLog.recordSize)
        }
    }

    @Test func compactionKeepsOneRecordPerLiveMessageAndDropsExpiredTombstones() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let generation = try inbox.generation()
        // b (seq 5) and a (seq 8) are live; c's tombstone (seq 7) has expired.
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
        let raw = try inbox.rawGeneration()
        // The compaction dropped a deletion, so the epoch (last field) moved to 1.
        #expect(inbox.logHeaderText() == "MOCKCLOUD-INBOX-LOG 1 \(raw) "
            + "00000000000000000007 00000000000000000008 00000000000000000002 00000000000000000001")
        #expect(inbox.messageFiles() == ["a.json", "b.json"])
        let records = String(decoding: inbox.logBytes().dropFirst(ChangeLog.recordSize), as: UTF8.self)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(records == ["00000000000000000005 P 0000000001 b", "00000000000000000008 P 0000000002 a"])

        // A fresh read works and shows the live messages, oldest first.
        let page = try inbox.feed().inboxObject()
        let ids = InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
        #expect(ids == ["b", "a"])
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["anchor"] == .string("\(generation).8"))

        // A reader that may not have seen c's deletion (an anchor issued before
        // the compaction, below the dropped seq) must restart; one that has may go on.
        for seq in [1, 6] {
            let response = inbox.feed("anchor=\(raw).0.\(seq)")
            #expect(response.status == 410)
            #expect(response.inboxBody == InboxSandbox.gone(.compacted, "anchor is older than the deletions this inbox still keeps"))
        }
        #expect(inbox.feed("anchor=\(raw).0.7").status == 200)
        let onward = try inbox.feed("anchor=\(generation).7").inboxObject()
        #expect(InboxJSON.array(onward["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a"])

        // Seq keeps increasing, and the id of an expired tombstone is new again.
        let next = inbox.put("c", #"{"v": 5}"#)
        #expect(next.status == 201)
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 9)
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        #expect(inbox.get("b").status == 200)
    }

    @Test func aFreshReaderPagingAfterCompactionReachesTheEnd() throws {
        // After compaction, a live message can have a lower seq than the
        // tombstones it dropped; a reader starting afresh pages through it.
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let first = try inbox.feed("limit=1").inboxObject()
        #expect(InboxJSON.array(first["messages"]).map(InboxJSON.text) == [inbox.get("b").inboxBody])
        #expect(first["hasMore"] == .bool(true))
        let anchor = try #require(InboxJSON.string(first["anchor"]))
        let second = inbox.feed("limit=1&anchor=" + anchor)
        #expect(second.status == 200, "after anchor \(anchor): \(second.inboxBody)")
        let page = try second.inboxObject()
        #expect(InboxJSON.array(page["messages"]).map(InboxJSON.text) == [inbox.get("a").inboxBody])
        #expect(page["hasMore"] == .bool(false))
    }

    @Test func tombstonesWithinTheHorizonSurviveCompaction() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 3600), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let generation = try inbox.generation()
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        #expect(inbox.logHeaderText() == "MOCKCLOUD-INBOX-LOG 1 \(try inbox.rawGeneration()) "
            + "00000000000000000000 00000000000000000008 00000000000000000003 00000000000000000000")
        #expect(inbox.messageFiles() == ["a.json", "b.json", "c.json"])
        // An old anchor is still answerable and learns of the deletion.
        let page = try inbox.feed("anchor=\(generation).1").inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["b", "a"])
        #expect(InboxJSON.text(.array(InboxJSON.array(page["deleted"]))) == #"[{"id": "c", "seq": 7}]"#)
    }

    @Test func compactionRunsAgainOnlyOnceTheLogHasDoubled() throws {
        var settings = Self.settings(horizon: 0)
        settings.compactionMinimumRecords = 4
        let inbox = try InboxSandbox(settings: settings, clockStep: 1_000_000)
        for id in ["a", "b", "c", "d"] { _ = inbox.put(id, "{}") }
        // Four live messages: compaction keeps four records, the next waits for eight.
        #expect(inbox.logSize() == 5 * ChangeLog.recordSize)
        for i in 1...3 {
            _ = inbox.put("a", #"{"v": \#(i)}"#)
            #expect(inbox.logSize() == (5 + i) * ChangeLog.recordSize)
        }
        _ = inbox.put("a", #"{"v": 4}"#)
        #expect(inbox.logSize() == 5 * ChangeLog.recordSize)
        #expect(inbox.logHeaderText().hasSuffix(
            "00000000000000000000 00000000000000000008 00000000000000000004 00000000000000000000"))
    }

    @Test func aReaderMidwayContinuesAcrossACompactionThatKeptTombstones() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 3600), clockStep: 1_000_000)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        var reader = InboxFeedReader()
        #expect(try reader.readPage(inbox, limit: 1) == true)
        for i in 1...6 { _ = inbox.put("b", #"{"v": \#(i)}"#) }
        // Compacted to a (1) and b (8) at the eighth change; then a's deletion (9).
        _ = inbox.delete("a")
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        try reader.drain(inbox, limit: 1)
        #expect(reader.restarts == 0)
        #expect(reader.state == ["b": inbox.get("b").inboxBody])
    }

    @Test func compactionThatDropsEverythingKeepsSeqAndServesAFreshRead() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        for id in ["a", "b", "c", "d"] {
            _ = inbox.put(id, "{}")
            _ = inbox.delete(id)
        }
        let generation = try inbox.generation()
        #expect(inbox.logSize() == ChangeLog.recordSize)
        #expect(inbox.messageFiles() == [])
        #expect(inbox.feed().inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).0", "hasMore": false}
            """)
        #expect(inbox.feed("anchor=\(generation).8").status == 200)
        #expect(inbox.feed("anchor=\(generation).9").status == 410)
        // Issued before the compaction (epoch 0) and below the deletions it dropped.
        #expect(inbox.feed("anchor=\(try inbox.rawGeneration()).0.7").status == 410)
        let next = inbox.put("a", "{}")
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 9)
    }
}
