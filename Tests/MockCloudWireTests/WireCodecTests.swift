import MockCloudJSON
import MockCloudWire
import Testing

/// The documents of the wire that the server writes and the client reads
/// (or the other way round) go through one encode/decode pair each: what
/// one side writes, the other reads back unchanged.
@Suite struct WireCodecTests {
    @Test func xMergeKeptQuotesNamesAHeaderCouldNotCarryBare() {
        #expect(MergeKept.header([]) == nil)
        #expect(MergeKept.header(["a", "b.c-d_E9"]) == "a, b.c-d_E9")
        #expect(MergeKept.header(["two words", "caf\u{e9}", "x,y", "", "q\"\n"])
            == #""two words", "caf\u00e9", "x,y", "", "q\"\n""#)
        let many = (0..<1000).map { "member\($0)" }
        let header = MergeKept.header(many)!
        #expect(header.utf8.count <= MergeKept.headerLimit)
        #expect(header.hasPrefix("member0, member1, "))
        #expect(header.hasSuffix(", *"))
    }

    @Test(arguments: [
        ["a", "b.c-d_E9"], ["two words", "caf\u{e9}", "x,y", "", "q\"\n", "back\\slash"], ["\u{1F600}", " padded "],
    ])
    func xMergeKeptReadsBackWhatItWrote(_ names: [String]) throws {
        let kept = try MergeKept(header: try #require(MergeKept.header(names)))
        #expect(kept == MergeKept(names: names))
    }

    @Test func aCutXMergeKeptSaysItIsIncomplete() throws {
        let many = (0..<1000).map { "member\($0)" }
        let kept = try MergeKept(header: try #require(MergeKept.header(many)))
        #expect(!kept.isComplete)
        #expect(kept.names == Array(many.prefix(kept.names.count)))
        #expect(try MergeKept(header: " a ,b,  *") == MergeKept(names: ["a", "b"], isComplete: false))
        #expect(throws: WireFormatError(#"X-Merge-Kept is not a list of names: "unclosed"#)) {
            try MergeKept(header: #""unclosed"#)
        }
    }

    @Test func memberTimesReadBackAsWritten() throws {
        var times = MemberTimes()
        times[MemberName("b")] = MemberEdit(at: 1_779_000_000_000_000, device: DeviceID("phone-a"))
        times[MemberName("a\u{e9}")] = MemberEdit(at: 1_779_000_000_000_001, deleted: true)
        let answer = TimedDocument(document: try JSONParser.parse(Array(#"{"b": 1}"#.utf8)), times: times)
        let text = String(decoding: JSONPrinter.compact(answer.json), as: UTF8.self)
        #expect(text == #"{"document": {"b": 1}, "times": {"a\u00e9": {"at": "20260517T064000.000001Z", "deleted": true}, "#
            + #""b": {"at": "20260517T064000.000000Z", "device": "phone-a"}}}"#)
        #expect(try TimedDocument(json: try JSONParser.parse(Array(text.utf8))) == answer)
    }

    @Test(arguments: [
        (#"[]"#, "the times of a document are not an object"),
        (#"{"updatedAt": {"at": "2026-05-18T10:00:00Z"}}"#, #""updatedAt" has a time, but it is no member of its own"#),
        (#"{"a": 1}"#, #"the time of member "a" is not an object"#),
        (#"{"a": {"at": "soon"}}"#, #"member "a" has a time that does not parse: soon"#),
        (#"{"a": {"at": "2026-05-18T10:00:00Z", "device": "a b"}}"#, #"member "a" names a device of the wrong shape"#),
        (#"{"a": {"at": "2026-05-18T10:00:00Z", "by": "x"}}"#, #"member "a" has an unknown field "by""#),
        (#"{"a": {"deleted": true}}"#, #"member "a" has no time"#),
    ])
    func memberTimesThatDoNotReadSayWhy(_ text: String, _ reason: String) {
        #expect(throws: WireFormatError(reason)) { try MemberTimes(json: try JSONParser.parse(Array(text.utf8))) }
    }

    @Test func aBulkRequestReadsBackAsItsItems() throws {
        let a = try #require(MessageID("nm-a")), b = try #require(MessageID("nm-b"))
        let body = BulkRequest.body([
            BulkRequest.encode(.put(a, version: 7, body: Array(#"{"kg": 70.5}"#.utf8))), BulkRequest.encode(.delete(b)),
        ])
        #expect(String(decoding: body, as: UTF8.self)
            == #"{"messages": [{"id": "nm-a", "version": 7, "body": {"kg": 70.5}}, {"id": "nm-b", "deleted": true}]}"#)
        let items = try BulkRequest.items(of: try JSONParser.parse(body))
        guard items.count == 2, case .put(a, 7, let value) = items[0], case .delete(b) = items[1] else {
            Issue.record("read back as \(items)")
            return
        }
        #expect(value == (try JSONParser.parse(Array(#"{"kg": 70.5}"#.utf8))))
    }

    @Test(arguments: [
        (#"{"id": 5, "body": {}}"#, BulkRequest.ItemProblem.invalidID),
        (#"{"id": "a", "body": {}, "kind": 1}"#, .unknownMember("kind")),
        (#"{"id": "a", "deleted": false}"#, .malformedDeletion),
        (#"{"id": "a", "deleted": true, "version": 1}"#, .malformedDeletion),
        (#"{"id": "a", "version": -1, "body": {}}"#, .invalidVersion(.number("-1"))),
        (#"{"id": "a", "version": 1}"#, .bodyNotAnObject),
    ])
    func aBulkItemThatAsksForNoChangeSaysWhy(_ text: String, _ problem: BulkRequest.ItemProblem) throws {
        let items = try BulkRequest.items(of: try JSONParser.parse(Array(#"{"messages": [\#(text)]}"#.utf8)))
        guard items.count == 1, case .invalid(_, let found) = items[0] else {
            Issue.record("\(text) read as \(items)")
            return
        }
        #expect(found == problem)
    }

    @Test func bulkResultsReadBackAsWritten() throws {
        let current = Envelope(id: MessageID("nm-a")!, version: 9, seq: 3, source: "phone", serverReceivedAt: "20260517T064000.000000Z",
                               body: .object(JSONObject()))
        let results = [
            BulkResult(id: .string("nm-a"), status: 201, seq: 4),
            BulkResult(id: .number("5"), status: 400, error: "invalid message id"),
            BulkResult(id: .string("nm-a"), status: 409, error: "lower", current: current),
        ]
        let answer = BulkResult.answer(results)
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix(
            #"{"results": [{"id": "nm-a", "status": 201, "seq": 4}, {"id": 5, "status": 400, "error": "invalid message id"}, "#))
        #expect(BulkResult.results(of: try JSONParser.parse(answer)) == results)
    }
}
