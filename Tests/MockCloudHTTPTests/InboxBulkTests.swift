@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import Testing

// POST /inbox:bulk through `InboxRoute`, and the anchor an empty
// inbox hands out, on `InboxSandbox`.

extension InboxSandbox {
    func bulk(_ json: String, device: String? = nil) -> CGIResponse {
        send("POST", "/inbox:bulk", headers: device.map { ["X-Device-Id": $0] } ?? [:], body: Array(json.utf8))
    }
}

extension CGIResponse {
    /// The results of a bulk answer as (id, status, seq) rows.
    fileprivate func bulkRows() throws -> [(String?, Int64?, Int64?)] {
        let results = InboxJSON.array(try #require(try JSONParser.parse(body).objectValue)["results"])
        return results.map { row in
            let object = row.objectValue
            return (InboxJSON.string(object?["id"]), InboxJSON.int(object?["status"]), InboxJSON.int(object?["seq"]))
        }
    }

    fileprivate func statuses() throws -> [Int64?] { try bulkRows().map { $0.1 } }
}

@Suite struct InboxBulkTests {
    @Test func eachItemAnswersWhatItsSingleRequestWouldHave() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("old", #"{"v": 5}"#, version: "5")
        _ = inbox.put("gone", "{}")
        let response = inbox.bulk("""
            {"messages": [{"id": "new", "version": 1, "body": {"kg": 71.3}}, {"id": "old", "version": 5, "body": {"v": 5}},
            {"id": "old", "version": 6, "body": {"v": 6}}, {"id": "old", "version": 4, "body": {}},
            {"id": "gone", "deleted": true}, {"id": "never", "deleted": true}, {"id": "a b", "body": {}},
            {"id": "x", "version": -1, "body": {}}, {"id": "x", "body": "text"}, {"id": "x", "deleted": false},
            {"id": "x", "body": {}, "verison": 2}]}
            """)
        #expect(response.status == 200)
        #expect(try response.statuses() == [201, 200, 200, 409, 204, 404, 400, 400, 400, 400, 400])
        #expect(try response.bulkRows().prefix(5).map { $0.2 } == [3, 1, 4, nil, 5])
        #expect(response.text.contains(#"{"id": "old", "status": 409, "error": "version 4 is lower than the stored version 6; nothing was written", "current": {"id": "old", "version": 6, "seq": 4"#))
        #expect(response.text.contains(#"{"id": "never", "status": 404, "error": "no message with this id"}"#))
        #expect(response.text.contains(#"{"id": "x", "status": 400, "error": "unknown member \"verison\": an item has id, version and body, or id and deleted"}"#))
        // The single requests see what the batch left.
        #expect(inbox.get("new").status == 200)
        #expect(inbox.get("gone").status == 404)
        #expect(try JSONParser.parse(inbox.get("old").body).objectValue?["version"] == .number("6"))
    }

    @Test func duplicatesOfOneIDApplyInOrderAndTheLastWriteWins() throws {
        let inbox = try InboxSandbox()
        let response = inbox.bulk("""
            {"messages": [{"id": "d", "version": 1, "body": {"n": 1}}, {"id": "d", "version": 1, "body": {"n": 1}},
            {"id": "d", "version": 3, "body": {"n": 3}}, {"id": "d", "version": 2, "body": {}},
            {"id": "d", "deleted": true}, {"id": "d", "version": 0, "body": {"n": 0}}]}
            """)
        #expect(try response.statuses() == [201, 200, 200, 409, 204, 201])
        #expect(try response.bulkRows().map { $0.2 } == [1, 1, 2, nil, 3, 4])
        #expect(inbox.messageText("d") == InboxSandbox.envelope("d", seq: 4, body: #"{"n": 0}"#))
        // One file per id, written once in its final state; a record per change.
        #expect(inbox.messageFiles() == ["d.json"])
        #expect(inbox.logSize() == 5 * ChangeLog.recordSize)
    }

    @Test func aBatchIsOneLogAppendAndTheFeedListsItInItemOrder() throws {
        let inbox = try InboxSandbox()
        _ = inbox.bulk(#"{"messages": [{"id": "f1", "body": {}}, {"id": "f2", "body": {}}, {"id": "f3", "body": {}}]}"#,
                       device: "phone-1")
        _ = inbox.bulk(#"{"messages": [{"id": "f2", "version": 1, "body": {"x": 1}}, {"id": "f4", "body": {}}]}"#,
                       device: "mirror-1")
        let page = try #require(try JSONParser.parse(inbox.feed().body).objectValue)
        let rows = InboxJSON.array(page["messages"]).map {
            (InboxJSON.string($0.objectValue?["id"]) ?? "", InboxJSON.int($0.objectValue?["seq"]) ?? 0,
             InboxJSON.string($0.objectValue?["source"]) ?? "")
        }
        #expect(rows.map { "\($0.0)@\($0.1) \($0.2)" } == ["f1@1 phone-1", "f3@3 phone-1", "f2@4 mirror-1", "f4@5 mirror-1"])
        let own = try #require(try JSONParser.parse(inbox.feed("exclude-source=phone-1").body).objectValue)
        #expect(InboxJSON.array(own["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["f2", "f4"])
    }

    @Test func aRetriedBatchChangesNothing() throws {
        let inbox = try InboxSandbox(clockStep: 1_000_000)
        let request = #"{"messages": [{"id": "r1", "version": 1, "body": {"a": 1}}, {"id": "r2", "body": {}}]}"#
        #expect(try inbox.bulk(request).statuses() == [201, 201])
        let log = inbox.logBytes()
        let files = [inbox.messageText("r1"), inbox.messageText("r2")]
        let retry = inbox.bulk(request)
        #expect(try retry.statuses() == [200, 200])
        #expect(try retry.bulkRows().map { $0.2 } == [1, 2])
        #expect(inbox.logBytes() == log)
        #expect([inbox.messageText("r1"), inbox.messageText("r2")] == files)
    }

    @Test func aMalformedEnvelopeIs400AndWritesNothing() throws {
        let inbox = try InboxSandbox()
        let cases: [(String, String)] = [
            ("[]", #"body must be {\"messages\": [item, ...]}; nothing was written"#),
            (#"{"messages": {}}"#, #"body must be {\"messages\": [item, ...]}; nothing was written"#),
            (#"{"messages": [], "x": 1}"#, #"body must be {\"messages\": [item, ...]}; nothing was written"#),
            (#"{"messages": [{"id": "a", "body": {}}, null]}"#, "messages[1] is not a JSON object; nothing was written"),
            (#"{"messages": ["#, "body is not valid JSON"),
        ]
        for (json, error) in cases {
            let response = inbox.bulk(json)
            #expect(response.status == 400, "\(json)")
            #expect(response.text == InboxSandbox.error(error), "\(json)")
        }
        #expect(InboxSandbox.entries(inbox.root).filter { $0 == "inbox" }.isEmpty)
    }

    @Test func aThousandItemsAreAcceptedAndOneMoreIs413() throws {
        let inbox = try InboxSandbox()
        func items(_ count: Int) -> String {
            "{\"messages\": [" + (0..<count).map { "{\"id\": \"m\($0)\", \"body\": {}}" }.joined(separator: ", ") + "]}"
        }
        let over = inbox.bulk(items(1001))
        #expect(over.status == 413)
        #expect(over.text == InboxSandbox.error(
            "too many messages: POST /inbox:bulk accepts up to 1000 per request, this one has 1001; nothing was written"))
        #expect(inbox.logSize() == nil)
        let full = inbox.bulk(items(1000))
        #expect(full.status == 200)
        #expect(Set(try full.statuses()) == [201])
        #expect(inbox.messageFiles().count == 1000)
    }

    @Test func anItemBodyOver256KiBIsThatItems413() throws {
        let inbox = try InboxSandbox()
        let pad = String(repeating: "x", count: InboxRoute.bodyLimit)
        let response = inbox.bulk(#"{"messages": [{"id": "big", "body": {"p": "\#(pad)"}}, {"id": "ok", "body": {}}]}"#)
        #expect(try response.statuses() == [413, 201])
        #expect(response.text.contains("request body larger than this route's limit of 262144 bytes"))
    }

    @Test func deletionsOfAnInboxThatDoesNotExistCreateNothing() throws {
        let inbox = try InboxSandbox()
        #expect(try inbox.bulk(#"{"messages": [{"id": "a", "deleted": true}]}"#).statuses() == [404])
        #expect(InboxSandbox.entries(inbox.root).filter { $0 == "inbox" }.isEmpty)
    }

    @Test func onlyPOSTReachesTheBulkPath() throws {
        let inbox = try InboxSandbox()
        let response = inbox.send("GET", "/inbox:bulk")
        #expect(response.status == 405)
        #expect(response.header("Allow") == "POST")
    }

    @Test func aSingleWriteOverTheMessageLimitIsStill413() throws {
        let inbox = try InboxSandbox()
        let body = "{\"p\": \"" + String(repeating: "x", count: InboxRoute.bodyLimit) + "\"}"
        #expect(inbox.put("m", body).status == 413)
    }
}

@Suite struct InboxEmptyAnchorTests {
    static func compacting() -> InboxSettings {
        var settings = InboxSettings()
        settings.compactionMinimumRecords = 4
        settings.tombstoneHorizonSeconds = 0
        return settings
    }

    @Test func theEmptyInboxsAnchorIs410AfterCompactionDroppedADeletion() throws {
        let inbox = try InboxSandbox(settings: Self.compacting(), clockStep: 1_000_000)
        let empty = try #require(try JSONParser.parse(inbox.feed().body).objectValue)
        #expect(empty["anchor"] == .string("0.0.0"))
        _ = inbox.put("mine", "{}", device: "phone-1")
        _ = inbox.delete("mine", device: "mirror-1")
        for i in 0..<4 { _ = inbox.put("x\(i)", "{}") }  // the log doubles: compaction drops the tombstone
        #expect(inbox.messageText("mine") == nil)
        let response = inbox.feed("anchor=0.0.0&exclude-source=phone-1")
        #expect(response.status == 410)
        #expect(response.text == InboxSandbox.gone(.compacted, "anchor is older than the deletions this inbox still keeps"))
        // The recovery read: no anchor, no exclude-source.
        #expect(inbox.feed().status == 200)
    }

    @Test func theEmptyInboxsAnchorIsAnsweredWhileNothingWasDropped() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        _ = inbox.delete("a")
        let page = try #require(try JSONParser.parse(inbox.feed("anchor=0.0.0").body).objectValue)
        #expect(InboxJSON.array(page["deleted"]).count == 1)
    }

    @Test func anAnchorAtSeqZeroOfAnotherGenerationIs410() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        #expect(inbox.feed("anchor=0123456789abcdef.0.0").status == 410)
        #expect(inbox.feed("anchor=0.1.0").status == 410)
        #expect(inbox.feed("anchor=\(try inbox.rawGeneration()).0.0").status == 200)
    }
}
