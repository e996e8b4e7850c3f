import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// An envelope prints the same bytes whether its body comes printed
/// (`PrintedJSON`: a bulk item, measured before it is stored) or not.
@Suite struct EnvelopeTests {
    static let bodies = [
        #"{}"#, #"{"kg": 71.3}"#,
        #"{"type": "HKQuantityTypeIdentifierBodyMass", "source": {"name": "K\u00f6rperwaage", "v": [1, 2.50, null]}, "ok": true}"#,
    ]

    @Test(arguments: bodies, [nil, "phone-1"])
    func aPrintedBodyIsSplicedIntoTheSameBytes(text: String, source: String?) throws {
        let body = try JSONParser.parse(Array(text.utf8))
        let id = try #require(MessageID("nm-1"))
        let plain = Envelope(id: id, version: 3, seq: 41, source: source, serverReceivedAt: "2026-12-01T10:00:00.000000Z",
                             body: body)
        let printed = Envelope(id: id, version: 3, seq: 41, source: source,
                               serverReceivedAt: "2026-12-01T10:00:00.000000Z", body: PrintedJSON(body))
        #expect(printed.bytes == JSONPrinter.compact(plain.json))
        #expect(printed.bytes == plain.bytes)
        #expect(Envelope(bytes: printed.bytes) == plain)
    }

    @Test func aBodyChangedAfterwardsIsPrintedAnew() throws {
        var envelope = Envelope(id: try #require(MessageID("nm-1")), version: 1, seq: 2, source: nil,
                                serverReceivedAt: "", body: PrintedJSON(.object(JSONObject())))
        envelope.content = try JSONParser.parse(Array(#"{"kg": 70}"#.utf8))
        #expect(envelope.bytes == JSONPrinter.compact(envelope.json))
    }

    @Test func aPrintedBodyIsTheCompactForm() throws {
        let value = try JSONParser.parse(Array(#"{"a":[1,{"b":"\u00e9"}]}"#.utf8))
        #expect(String(decoding: PrintedJSON(value).compact, as: UTF8.self) == #"{"a": [1, {"b": "\u00e9"}]}"#)
    }
}
