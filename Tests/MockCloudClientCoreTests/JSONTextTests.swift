import MockCloudClient
import MockCloudPortableTestSupport
import MockCloudWire
import Testing

@Suite struct JSONTextTests {
    @Test func aBodyKeepsMemberOrderAndNumberTextInCompactForm() throws {
        let text = try JSONText(validating: "{ \"z\":1,\n \"a\": 0.9990998620664758, \"big\": 12345678901234567890 }")
        #expect(text.description == #"{"z": 1, "a": 0.9990998620664758, "big": 12345678901234567890}"#)
    }

    @Test(arguments: [("[]", "not a JSON object"), ("{", "not valid JSON")])
    func anythingButAnObjectIsRefused(_ input: String, _ reason: String) {
        #expect {
            try JSONText(validating: input)
        } throws: { "\($0)".contains(reason) }
    }

    @Test(arguments: [(#"{"syncVersion": 3}"#, Int64(3)), (#"{"other": 1}"#, nil)])
    func theVersionIsTheSyncVersionMember(_ input: String, _ version: Int64?) throws {
        #expect(try JSONText(validating: input).version(member: "syncVersion") == version)
    }

    @Test(arguments: [#"{"syncVersion": -1}"#, #"{"syncVersion": 1.5}"#, #"{"syncVersion": "2"}"#, #"{"syncVersion": 1234567890123456789}"#])
    func aSyncVersionThatIsNoVersionIsRefused(_ input: String) throws {
        #expect(throws: JSONTextError.notAVersion(member: "syncVersion")) { try JSONText(validating: input).version(member: "syncVersion") }
    }

    @Test func aCAFileIsCheckedAgainstItsFingerprint() throws {
        let directory = try TemporaryDirectory()
        let pem = "-----BEGIN CERTIFICATE-----\nAAECAw==\n-----END CERTIFICATE-----\n"
        try directory.write(pem, to: "ca.crt")
        // SHA-256 of the bytes 00 01 02 03.
        let digest = "054edec1d0211f624fed0cbca9d4f9400b0e491c43742af2c5b0abebf0c990d8"
        #expect(try TrustAnchor(caFile: directory.file("ca.crt"), expectedSHA256: digest.uppercased()).sha256 == digest)
        #expect(throws: ClientError.self) { try TrustAnchor(caFile: directory.file("ca.crt"), expectedSHA256: "00") }
        #expect(throws: ClientError.self) { try TrustAnchor(caFile: directory.file("missing.crt")) }
    }
}
