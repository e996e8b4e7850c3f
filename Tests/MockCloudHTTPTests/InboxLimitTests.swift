import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxLimitTests {
    static func inbox(max: Int, compactAfter: Int = 1024) throws -> InboxSandbox {
        var settings = InboxSettings()
        settings.maxMessages = max
        settings.compactionMinimumRecords = compactAfter
        return try InboxSandbox(settings: settings, clockStep: 1_000_000)
    }

    @Test func aNewMessageBeyondMaxMessagesIs507AndStoresNothing() throws {
        let inbox = try Self.inbox(max: 3)
        for id in ["a", "b", "c"] { #expect(inbox.put(id, "{}").status == 201) }
        let logBefore = inbox.logBytes()
        let full = inbox.put("d", "{}")
        #expect(full.status == 507)
        #expect(full.inboxBody == InboxSandbox.error("inbox full: this key already holds 3 messages; delete some first"))
        #expect(inbox.post("{}").status == 507)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageFiles() == ["a.json", "b.json", "c.json"])

        // Replacing a stored message is not a new one.
        #expect(inbox.put("a", #"{"v": 2}"#).status == 200)
        // After a deletion a new one fits; a deleted id counts as new.
        #expect(inbox.delete("b").status == 204)
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("b", "{}").status == 507)
        #expect(inbox.put("e", "{}").status == 507)
        #expect(inbox.delete("c").status == 204)
        #expect(inbox.put("b", "{}").status == 201)
    }

    @Test func theLimitHoldsAcrossCompaction() throws {
        let inbox = try Self.inbox(max: 3, compactAfter: 4)
        for id in ["a", "b", "c"] { _ = inbox.put(id, "{}") }
        for i in 1...5 { _ = inbox.put("a", #"{"v": \#(i)}"#) }
        #expect(inbox.put("d", "{}").status == 507)
        _ = inbox.delete("a")
        for i in 1...5 { _ = inbox.put("b", #"{"v": \#(i)}"#) }
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("e", "{}").status == 507)
    }
}
