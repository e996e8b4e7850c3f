import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// A stored envelope prints the same bytes whether its body comes printed
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
        var plain = StoredEnvelope(Envelope(id: id, version: 3, seq: 0, source: nil, serverReceivedAt: "", body: body))
        var printed = StoredEnvelope(id: id, version: 3, body: PrintedJSON(body))
        plain.stamp(seq: 41, source: source.flatMap(DeviceID.init), receivedAt: "2026-12-01T10:00:00.000000Z")
        printed.stamp(seq: 41, source: source.flatMap(DeviceID.init), receivedAt: "2026-12-01T10:00:00.000000Z")
        #expect(printed.bytes == JSONPrinter.compact(plain.envelope.json))
        #expect(printed.bytes == plain.bytes)
        #expect(StoredEnvelope(bytes: printed.bytes) == plain)
    }

    @Test func anEnvelopeReadFromDiskKeepsItsBytes() throws {
        // Not the printers' spacing: sent as stored, never printed again.
        let text = #"{"id":"nm-1","version":1,"seq":2,"source":null,"serverReceivedAt":"","body":{"kg": 70}}"#
        let stored = try #require(StoredEnvelope(bytes: Array(text.utf8)))
        #expect(stored.bytes == Array(text.utf8))
        #expect(stored.envelope.content == (try JSONParser.parse(Array(#"{"kg": 70}"#.utf8))))
    }

    @Test func aPrintedBodyIsTheCompactForm() throws {
        let value = try JSONParser.parse(Array(#"{"a":[1,{"b":"\u00e9"}]}"#.utf8))
        #expect(String(decoding: PrintedJSON(value).compact, as: UTF8.self) == #"{"a": [1, {"b": "\u00e9"}]}"#)
    }
}
