import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxReadAndDeleteTests {
    @Test func getReturnsTheStoredEnvelope() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": [1, 2]}"#, version: "9", device: "phone")
        let response = inbox.get("m")
        #expect(response.status == 200)
        #expect(response.header("Location") == nil)
        #expect(response.inboxBody
            == InboxSandbox.envelope("m", version: 9, seq: 1, source: "phone", body: #"{"a": [1, 2]}"#))
    }

    @Test func getOfAnUnknownIDIs404() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.get("n")
        #expect(response.status == 404)
        #expect(response.inboxBody == InboxSandbox.error("no message with this id"))
    }

    @Test func deleteAnswers204ThenTheMessageIsGone() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}", version: "4")
        let delete = inbox.delete("m", device: "mirror-1")
        #expect(delete.status == 204)
        #expect(delete.body == [])
        let get = inbox.get("m")
        #expect(get.status == 404)
        #expect(get.inboxBody == InboxSandbox.error("no message with this id"))
        let again = inbox.delete("m")
        #expect(again.status == 404)
        #expect(again.inboxBody == InboxSandbox.error("no message with this id"))
        // The tombstone keeps the id, version and deleter, with its own seq.
        #expect(inbox.messageText("m") == """
            {"id": "m", "version": 4, "seq": 2, "source": "mirror-1", \
            "serverReceivedAt": "\(InboxSandbox.stamp)", "deleted": true}
            """)
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
    }

    @Test func deleteOfAnUnknownIDIs404AndWritesNothing() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.delete("n").status == 404)
        #expect(inbox.logSize() == 2 * ChangeLog.recordSize)
        #expect(inbox.messageFiles() == ["m.json"])
    }

    @Test func aDeletionAppearsInTheFeedAsIDAndSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        _ = inbox.delete("m")
        let generation = try inbox.generation()
        #expect(inbox.feed().inboxBody == """
            {"messages": [], "deleted": [{"id": "m", "seq": 2}], "anchor": "\(generation).2", "hasMore": false}
            """)
        #expect(inbox.feed("anchor=\(generation).1").inboxBody == """
            {"messages": [], "deleted": [{"id": "m", "seq": 2}], "anchor": "\(generation).2", "hasMore": false}
            """)
    }

    @Test func aDamagedMessageFileIsA500NotACrash() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        _ = inbox.put("n", "{}")
        // Garbage, and a valid envelope copied under another id.
        try Data("{\"id\": ".utf8).write(to: URL(fileURLWithPath: inbox.messagesPath + "/m.json"))
        try Data(try #require(inbox.messageText("n")).utf8)
            .write(to: URL(fileURLWithPath: inbox.messagesPath + "/o.json"))
        let expected = InboxSandbox.error("a stored message is damaged; see the server log")
        for response in [inbox.get("m"), inbox.get("o"), inbox.put("m", "{}"), inbox.feed()] {
            #expect(response.status == 500)
            #expect(response.inboxBody == expected)
        }
    }

    @Test func aDamagedLogHeaderIsA500NotACrash() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        var bytes = inbox.logBytes()
        bytes.replaceSubrange(0..<9, with: Array("GARBAGE!!".utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: inbox.logPath))
        let expected = InboxSandbox.error("the inbox's change log is damaged; see the server log")
        for response in [inbox.feed(), inbox.put("n", "{}")] {
            #expect(response.status == 500)
            #expect(response.inboxBody == expected)
        }
        #expect(inbox.get("m").status == 200)
    }
}
