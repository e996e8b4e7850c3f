import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxCrashRecoveryTests {
    static let damagedTails: [[UInt8]] = [
        Array(repeating: UInt8(ascii: "x"), count: 100),
        Array(repeating: 0, count: 256),
        Array(repeating: 0, count: 300),
        // A record cut short, and one whose second half never reached the disk.
        Array(("00000000000000000003 P 0000000003 c" + String(repeating: " ", count: 219) + "\n").utf8),
        Array("00000000000000000003 P 0000000003 c".utf8) + Array(repeating: 0x20, count: 93)
            + Array(repeating: 0, count: 128),
    ]

    @Test(arguments: InboxCrashRecoveryTests.damagedTails)
    func aDamagedLogTailIsIgnoredByReadersAndCutByTheNextWrite(tail: [UInt8]) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        let before = inbox.feed().inboxBody
        try inbox.appendToLog(tail)
        #expect(inbox.feed().inboxBody == before)
        #expect(inbox.get("a").status == 200)

        let next = inbox.put("c", "{}")
        #expect(next.status == 201)
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 3)
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a", "b", "c"])
        #expect(page["anchor"] == .string("\(try inbox.generation()).3"))
    }

    @Test func recordsWithoutTheirMessagesLeaveTheOldStateVisible() throws {
        let inbox = try InboxSandbox()
        let a = inbox.put("a", #"{"v": 1}"#)
        let b = inbox.put("b", #"{"v": 1}"#)
        let generation = try inbox.generation()
        // Interrupted: a new message c, a replacement of a, a deletion of b.
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        try inbox.appendOrphanRecord(seq: 4, live: 2, id: "a")
        try inbox.appendOrphanRecord(seq: 5, deleted: true, live: 2, id: "b")

        #expect(inbox.get("c").status == 404)
        #expect(inbox.get("a").inboxBody == a.inboxBody)
        #expect(inbox.get("b").inboxBody == b.inboxBody)
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a", "b"])
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["anchor"] == .string("\(generation).5"))
        #expect(page["hasMore"] == .bool(false))

        // The next write gets a seq no record has used.
        let c = inbox.put("c", "{}")
        #expect(c.status == 201)
        #expect(InboxJSON.int(try c.inboxObject()["seq"]) == 6)
        #expect(inbox.feed("anchor=\(generation).5").inboxBody == """
            {"messages": [\(c.inboxBody)], "deleted": [], "anchor": "\(generation).6", "hasMore": false}
            """)
        // A retry of the interrupted replacement is a retry of the stored state.
        #expect(inbox.put("a", #"{"v": 1}"#).inboxBody == a.inboxBody)
    }

    @Test func aSingleInterruptedNewMessageDoesNotCountAgainstTheLimit() throws {
        let inbox = try InboxLimitTests.inbox(max: 3)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("e", "{}").status == 507)
    }

    @Test func twoInterruptedNewMessagesInARowDoNotCountAgainstTheLimit() throws {
        // Each failed write (a crash, or a message write refused by a full disk
        // after the log append) leaves a record; the second was counted by the
        // store as it would have been: 2 live (the first record is an orphan) + 1.
        let inbox = try InboxLimitTests.inbox(max: 3)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        try inbox.appendOrphanRecord(seq: 4, live: 3, id: "d")
        let e = inbox.put("e", "{}")
        #expect(e.status == 201, "\(e.inboxBody)")
        #expect(inbox.put("f", "{}").status == 507)
    }
}
