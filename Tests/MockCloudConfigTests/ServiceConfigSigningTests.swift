import MockCloudConfig
import MockCloudStore
import Testing

/// Signing as the environment configures it: a missing key file or
/// `MOCKCLOUD_HMAC_REQUIRE=1` without keys is a misconfiguration.
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
}
