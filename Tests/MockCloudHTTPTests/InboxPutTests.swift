import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxPutTests {
    @Test func putOfANewIDIsCreatedWithLocationAndTheEnvelope() throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("nm-1234-weight", #"{"kg": 81.5}"#)
        let expected = InboxSandbox.envelope("nm-1234-weight", seq: 1, body: #"{"kg": 81.5}"#)
        #expect(response.status == 201)
        #expect(response.header("Location") == "/inbox/nm-1234-weight")
        #expect(response.inboxBody == expected)
        #expect(inbox.messageFiles() == ["nm-1234-weight.json"])
        #expect(inbox.messageText("nm-1234-weight") == expected)
        #expect(inbox.logSize() == 2 * ChangeLog.recordSize)
        #expect(InboxSandbox.entries(inbox.inboxPath) == ["changes.log", "messages"])
    }

    @Test func bodyIsStoredExactlyAsSent() throws {
        let inbox = try InboxSandbox()
        let body = #"{"z": 1, "a": 0.9990998620664758, "big": 12345678901234567890, "s": "\u00e9", "n": {"y": [1.50e3, null]}}"#
        let response = inbox.put("m", body)
        #expect(response.status == 201)
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 1, body: body))
        #expect(inbox.get("m").inboxBody == InboxSandbox.envelope("m", seq: 1, body: body))
    }

    @Test func retryWithSameVersionAndBodyChangesNothing() throws {
        let inbox = try InboxSandbox(clockStep: 1_000_000)
        let first = inbox.put("m", #"{"a": 1}"#, version: "3", device: "phone")
        #expect(first.status == 201)
        let logBefore = inbox.logBytes()
        let fileBefore = inbox.messageText("m")

        let retry = inbox.put("m", #"{"a": 1}"#, version: "3", device: "mirror-1")
        #expect(retry.status == 200)
        #expect(retry.header("Location") == nil)
        // Same seq, same time stamp, same source: the stored envelope, untouched.
        #expect(retry.inboxBody == first.inboxBody)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageText("m") == fileBefore)
        #expect(inbox.feed().inboxBody.contains("\"anchor\": \"\(try inbox.generation()).1\""))
    }

    @Test func sameVersionWithADifferentBodyIsReplacedWithANewSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "3")
        let response = inbox.put("m", #"{"a": 2}"#, version: "3")
        let expected = InboxSandbox.envelope("m", version: 3, seq: 2, body: #"{"a": 2}"#)
        #expect(response.status == 200)
        #expect(response.header("Location") == nil)
        #expect(response.inboxBody == expected)
        #expect(inbox.messageText("m") == expected)
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
    }

    @Test(arguments: [
        (#"{"a": 1, "b": 2}"#, #"{"b": 2, "a": 1}"#),
        (#"{"a": 1}"#, #"{"a": 1.0}"#),
        (#"{"a": "x"}"#, #"{"a": "x", "b": null}"#),
    ])
    func sameVersionWithAnyVisibleDifferenceInTheBodyIsAChange(first: String, second: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", first)
        let response = inbox.put("m", second)
        #expect(response.status == 200)
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 2, body: second))
    }

    @Test func higherVersionIsReplacedWithANewSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "1", device: "phone")
        let response = inbox.put("m", #"{"a": 1}"#, version: "2", device: "mirror-1")
        let expected = InboxSandbox.envelope("m", version: 2, seq: 2, source: "mirror-1", body: #"{"a": 1}"#)
        #expect(response.status == 200)
        #expect(response.inboxBody == expected)
        #expect(inbox.get("m").inboxBody == expected)
    }

    @Test func lowerVersionIsRejectedWithTheCurrentEnvelope() throws {
        let inbox = try InboxSandbox()
        let stored = inbox.put("m", #"{"a": 1}"#, version: "5")
        let logBefore = inbox.logBytes()
        let response = inbox.put("m", #"{"a": 2}"#, version: "4")
        #expect(response.status == 409)
        #expect(response.inboxBody == """
            {"error": "X-Sync-Version 4 is lower than the stored version 5; nothing was written", \
            "current": \(stored.inboxBody)}
            """)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageText("m") == stored.inboxBody)
    }

    @Test(arguments: ["-1", "abc", "", "1.0", "+1", " 1", "1 ", "0x10", "1000000000000000000", "99999999999999999999"])
    func malformedSyncVersionIsRejected(version: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", #"{"a": 1}"#, version: version)
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "invalid X-Sync-Version \\\"\(version)\\\": must be a non-negative integer"))
        #expect(inbox.messageFiles() == [])
        #expect(inbox.post(#"{"a": 1}"#, version: version).status == 400)
        #expect(inbox.messageFiles() == [])
    }

    @Test(arguments: [("0", Int64(0)), ("007", 7), ("999999999999999999", 999_999_999_999_999_999)])
    func syncVersionIsANonNegativeIntegerOfUpTo18Digits(text: String, value: Int64) throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", "{}", version: text)
        #expect(response.status == 201)
        #expect(response.inboxBody == InboxSandbox.envelope("m", version: value, seq: 1, body: "{}"))
    }

    @Test func versionDefaultsToZero() throws {
        let inbox = try InboxSandbox()
        let first = inbox.put("m", #"{"a": 1}"#)
        #expect(first.inboxBody == InboxSandbox.envelope("m", version: 0, seq: 1, body: #"{"a": 1}"#))
        // An explicit 0 with the same body is the same write: a retry.
        let retry = inbox.put("m", #"{"a": 1}"#, version: "0")
        #expect(retry.status == 200)
        #expect(retry.inboxBody == first.inboxBody)
        // Stored at 5, a write without the header is a lower version.
        _ = inbox.put("m", #"{"a": 1}"#, version: "5")
        #expect(inbox.put("m", #"{"a": 1}"#).status == 409)
    }

    @Test func deviceIDIsKeptAsSource() throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", "{}", device: "mirror-1")
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 1, source: "mirror-1", body: "{}"))
        #expect(inbox.put("n", "{}").inboxBody == InboxSandbox.envelope("n", seq: 2, source: nil, body: "{}"))
    }

    @Test(arguments: ["", "has space", "a/b", "caf\u{e9}", "a.b", "a:b", String(repeating: "d", count: 129)])
    func invalidDeviceIDIsRejected(device: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("invalid X-Device-Id shape")
        let put = inbox.put("m", "{}", device: device)
        #expect(put.status == 400)
        #expect(put.inboxBody == expected)
        #expect(inbox.post("{}", device: device).inboxBody == expected)
        #expect(inbox.messageFiles() == [])

        _ = inbox.put("m", "{}")
        let delete = inbox.delete("m", device: device)
        #expect(delete.status == 400)
        #expect(delete.inboxBody == expected)
        #expect(inbox.get("m").status == 200)
    }

    @Test func deviceIDOf128CharactersIsAccepted() throws {
        let inbox = try InboxSandbox()
        let device = String(repeating: "d", count: 128)
        #expect(inbox.put("m", "{}", device: device).inboxBody
            == InboxSandbox.envelope("m", seq: 1, source: device, body: "{}"))
    }

    @Test(arguments: ["a/b", "", String(repeating: "x", count: 201), "caf\u{e9}", "a b", "../x", "a\\b", "a?b", "a%2Fb"])
    func invalidMessageIDIsRejectedBeforeAnythingIsStored(id: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("invalid message id: must match ^[A-Za-z0-9._:-]{1,200}$")
        for response in [inbox.put(id, "{}"), inbox.get(id), inbox.delete(id)] {
            #expect(response.status == 400)
            #expect(response.inboxBody == expected)
        }
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
    }

    @Test(arguments: [".", "..", "...", "a:b.c-d_e", String(repeating: "x", count: 200)])
    func unusualValidIDsWorkAndStayInsideTheMessagesFolder(id: String) throws {
        let inbox = try InboxSandbox()
        let put = inbox.put(id, #"{"k": true}"#)
        #expect(put.status == 201)
        #expect(put.header("Location") == "/inbox/" + id)
        #expect(inbox.get(id).inboxBody == InboxSandbox.envelope(id, seq: 1, body: #"{"k": true}"#))
        #expect(inbox.messageFiles() == [id + ".json"])
        #expect(InboxSandbox.entries(inbox.inboxPath) == ["changes.log", "messages"])
        #expect(InboxSandbox.entries(inbox.root + "/inbox") == [InboxSandbox.key])
        #expect(InboxSandbox.entries(inbox.root) == [".locks", "inbox"])
        #expect(inbox.delete(id).status == 204)
        #expect(inbox.get(id).status == 404)
        #expect(inbox.messageFiles() == [id + ".json"])
    }

    @Test(arguments: ["[]", "1", "\"text\"", "null", "true", "[{}]"])
    func bodyThatIsNotAnObjectIsRejected(body: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("body must be a JSON object")
        #expect(inbox.put("m", body).inboxBody == expected)
        #expect(inbox.put("m", body).status == 400)
        #expect(inbox.post(body).inboxBody == expected)
        #expect(inbox.messageFiles() == [])
    }

    @Test(arguments: [
        Array("{".utf8), Array(#"{"a":}"#.utf8), [], Array("{'a': 1}".utf8), Array(#"{"a": 1} x"#.utf8),
        Array(#"{"a": 01}"#.utf8), [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],
    ] as [[UInt8]])
    func invalidJSONIsRejected(body: [UInt8]) throws {
        let inbox = try InboxSandbox()
        let put = inbox.send("PUT", "/inbox/m", body: body)
        #expect(put.status == 400)
        #expect(put.inboxBody == InboxSandbox.error("body is not valid JSON"))
        #expect(inbox.send("POST", "/inbox", body: body).status == 400)
        #expect(inbox.messageFiles() == [])
    }

    @Test func aDeletedIDCanBeWrittenAgainWhateverItsVersion() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "5")
        #expect(inbox.delete("m").status == 204)
        let again = inbox.put("m", #"{"a": 2}"#, version: "1")
        #expect(again.status == 201)
        #expect(again.header("Location") == "/inbox/m")
        #expect(again.inboxBody == InboxSandbox.envelope("m", version: 1, seq: 3, body: #"{"a": 2}"#))
        #expect(inbox.get("m").inboxBody == again.inboxBody)
    }
}
