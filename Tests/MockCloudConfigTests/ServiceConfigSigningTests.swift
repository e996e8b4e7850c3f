import MockCloudConfig
import MockCloudStore
import Testing

/// Signing as the environment configures it: a missing key file,
/// `MOCKCLOUD_HMAC_REQUIRE=1` without keys, or any other value of it than
/// `1`, is a misconfiguration.
@Suite struct ServiceConfigSigningTests {
    @Test func aMissingKeyFileIsA500ThatSaysSo() {
        #expect(throws: KeyFileError.unreadable(path: "/nonexistent/keys", reason: "No such file or directory")) {
            try ServiceConfig.integrity(["MOCKCLOUD_HMAC_KEYS": "/nonexistent/keys"])
        }
    }

    @Test func requireWithoutKeysIsAMisconfiguration() {
        #expect(throws: ConfigError("MOCKCLOUD_HMAC_REQUIRE=1 is set but MOCKCLOUD_HMAC_KEYS is not")) {
            try ServiceConfig.integrity(["MOCKCLOUD_HMAC_REQUIRE": "1"])
        }
    }

    @Test(arguments: ["true", "yes", "0", "on", " 1", "1 ", "01", "TRUE"])
    func requireTakesOnlyOneAndRefusesAnythingElseSayingWhat(_ value: String) {
        #expect(throws: ConfigError(
            "MOCKCLOUD_HMAC_REQUIRE=\(value) is not accepted: set it to 1 to refuse unsigned documents, or leave it unset")) {
            try ServiceConfig.integrity(["MOCKCLOUD_HMAC_REQUIRE": value, "MOCKCLOUD_HMAC_KEYS": "/nonexistent/keys"])
        }
    }

    @Test(arguments: [nil, ""] as [String?])
    func requireUnsetOrEmptyServesUnsignedDocuments(_ value: String?) throws {
        let environment = Environment(value.map { ["MOCKCLOUD_HMAC_REQUIRE": $0] } ?? [:])
        #expect(try ServiceConfig.requiresSigned(environment) == false)
        #expect(try ServiceConfig.integrity(environment).requireSigned == false)
    }

    @Test func requireOneIsRequire() throws {
        #expect(try ServiceConfig.requiresSigned(["MOCKCLOUD_HMAC_REQUIRE": "1"]))
    }
}
