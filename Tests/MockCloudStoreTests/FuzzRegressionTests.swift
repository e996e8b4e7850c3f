import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// What libFuzzer found (Tests/Fuzz/regressions), kept as unit tests.
@Suite struct FuzzRegressionTests {
    static func parse(_ text: String) throws -> JSONObject {
        try #require(try JSONParser.parse(Array(text.utf8)).objectValue)
    }

    @Test(arguments: [#"{"K":1,"\u212a":2}"#, #"{"\u00e9":1,"e\u0301":2}"#])
    func keysThatAreCanonicallyEquivalentButDifferentCodePointsAreTwoMembers(text: String) throws {
        let object = try Self.parse(text)
        #expect(object.count == 2)
        #expect(JSONPrinter.compact(.object(object)) == Array(text.replacingOccurrences(of: ":", with: ": ")
            .replacingOccurrences(of: ",", with: ", ").utf8))
    }

    @Test func aMergePatchRemovesOnlyTheKeyItNames() throws {
        let target = JSONValue.object(try Self.parse(#"{"K":1}"#))
        let merged = target.merging(patch: .object(try Self.parse(#"{"\u212a":null}"#)))
        #expect(JSONPrinter.compact(merged) == Array(#"{"K": 1}"#.utf8))
    }

    @Test func aLargeObjectTellsCanonicallyEquivalentKeysApartToo() throws {
        let filler = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(try Self.parse("{" + filler + #","K":1,"\u212a":2}"#).count == 42)
    }

    @Test(arguments: ["00000101T000000+01", "99991231T235959-01", "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z"])
    func timeStampsOutsideYears1To9999AreNotInstants(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test(arguments: ["00010101T000000Z", "99991231T235959.999999Z", "0001-01-01T00:30:00+00:30"])
    func theEdgesOfYears1To9999RoundTrip(text: String) throws {
        let instant = try #require(Timestamp.parse(text))
        #expect(Timestamp.parse(Timestamp.format(instant)) == instant)
    }

    @Test func anEnvelopeAfterAByteOrderMarkIsNotAnEnvelope() {
        let text = #"{"id":"a","version":1,"seq":2,"serverReceivedAt":"","body":{}}"#
        #expect(StoredEnvelope(bytes: Array(text.utf8)) != nil)
        #expect(StoredEnvelope(bytes: [0xEF, 0xBB, 0xBF] + Array(text.utf8)) == nil)
    }

    @Test func aTombstoneWithABodyOrAMessageWithANonObjectBodyIsNotAnEnvelope() {
        #expect(StoredEnvelope(bytes: Array(#"{"id":"a","version":1,"seq":2,"serverReceivedAt":"","deleted":true,"body":1}"#.utf8)) == nil)
        #expect(StoredEnvelope(bytes: Array(#"{"id":"a","version":1,"seq":2,"serverReceivedAt":"","body":1}"#.utf8)) == nil)
        #expect(StoredEnvelope(bytes: Array(#"{"id":"a","version":1,"seq":2,"serverReceivedAt":"","deleted":true}"#.utf8))?.envelope.isTombstone == true)
    }
}
