import Foundation
import MockCloudAdmin
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudStore
import MockCloudTestSupport
import Testing

/// What `mockcloud-admin` finds in a data directory, how it signs and
/// rotates, and the tokens it makes.
@Suite struct AdminCommandTests {
    @Test func verifyFindsEveryTamperedFileAmongManyAndExitsOne() throws {
        let dir = try TemporaryDirectory()
        let keys = dir.path + "/keys"
        try writeKeys(keys, "k1:\(SigningFixture.hexSecret)\n")
        let integrity = try ServiceConfig.integrity(["MOCKCLOUD_HMAC_KEYS": keys])
        let data = dir.path + "/data"
        let settings = SettingsRoute(dataRoot: data, integrity: integrity, clock: { 0 })
        let inbox = InboxRoute(dataRoot: data, integrity: integrity, clock: { 0 })
        for i in 0..<300 {
            _ = try settings.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u\(i)"], body: SigningFixture.bytes("{\"i\": \(i)}")))
            _ = try inbox.respond(to: CGIRequest(method: "PUT", path: "/inbox/m\(i % 7)", headers: ["X-User-Key": "u\(i % 3)", "X-Sync-Version": "\(i)"], body: SigningFixture.bytes("{}")))
        }
        let clean = AdminCommand.run(["verify", data], environment: ["MOCKCLOUD_HMAC_KEYS": keys])
        #expect(clean.status == 0)
        #expect(clean.output == ["checked 321 documents: 321 signed, 0 unsigned, 0 bad"])

        let tampered = ["\(data)/user_settings/u17.json", "\(data)/user_settings/u250.json", "\(data)/inbox/u1/messages/m3.json"]
        for file in tampered {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            try Data((text + " ").utf8).write(to: URL(fileURLWithPath: file))
        }
        let result = AdminCommand.run(["verify", data], environment: ["MOCKCLOUD_HMAC_KEYS": keys])
        #expect(result.status == 1)
        #expect(result.errors.count == 3)
        for file in tampered { #expect(result.errors.contains { $0.hasPrefix("BAD \(file): ") }) }
    }

    @Test func signSignsLegacyFilesAndRotateMovesEverythingToTheNewKey() throws {
        let dir = try TemporaryDirectory()
        let data = dir.path + "/data"
        _ = try SettingsRoute(dataRoot: data, clock: { 0 })
            .respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "legacy"], body: SigningFixture.bytes("{}")))
        let keys = dir.path + "/keys"
        try writeKeys(keys, "k1:\(SigningFixture.hexSecret)\n")
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).status == 1)
        let signed = AdminCommand.run(["sign", "--keys", keys, data], environment: [:])
        #expect(signed.output == ["signed 1 documents with key k1; 0 already were; 0 bad"])
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).status == 0)

        try writeKeys(keys, "k2:\(SigningFixture.base64Secret)\nk1:\(SigningFixture.hexSecret)\n")
        let rotated = AdminCommand.run(["rotate", "--keys", keys, data], environment: [:])
        #expect(rotated.output == ["re-signed 1 documents with key k2; 0 already were; 0 bad"])
        try writeKeys(keys, "k2:\(SigningFixture.base64Secret)\n")
        #expect(AdminCommand.run(["verify", "--keys", keys, data], environment: [:]).status == 0)
    }

    @Test func memberTimesAreVerifiedSignedAndRotatedWithTheDocuments() throws {
        let dir = try TemporaryDirectory()
        let data = dir.path + "/data"
        let merge = { (route: SettingsRoute, body: String) in
            _ = try route.respond(to: CGIRequest(
                method: "PATCH", path: "/user/settings",
                headers: ["X-User-Key": "u1", "X-Merge": "fields"],
                contentType: "application/merge-patch+json", body: SigningFixture.bytes(body)))
        }
        // Written while signing was off: a legacy document and legacy times.
        try merge(SettingsRoute(dataRoot: data, clock: { 0 }), #"{"a": 1, "updatedAt": "2026-05-18T10:00:00Z"}"#)
        let keys = dir.path + "/keys"
        try writeKeys(keys, "k1:\(SigningFixture.hexSecret)\n")
        #expect(AdminCommand.run(["verify", "--keys", keys, data], environment: [:]).output
            == ["checked 2 documents: 0 signed, 2 unsigned, 0 bad"])
        #expect(AdminCommand.run(["sign", "--keys", keys, data], environment: [:]).output
            == ["signed 2 documents with key k1; 0 already were; 0 bad"])
        #expect(FileManager.default.fileExists(atPath: data + "/user_settings/u1.json.times.mac"))
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).status == 0)

        try writeKeys(keys, "k2:\(SigningFixture.base64Secret)\nk1:\(SigningFixture.hexSecret)\n")
        #expect(AdminCommand.run(["rotate", "--keys", keys, data], environment: [:]).output
            == ["re-signed 2 documents with key k2; 0 already were; 0 bad"])
        let integrity = try ServiceConfig.integrity(["MOCKCLOUD_HMAC_KEYS": keys])
        try merge(SettingsRoute(dataRoot: data, integrity: integrity, clock: { 0 }), #"{"b": 2, "updatedAt": "2026-05-18T10:01:00Z"}"#)
        try writeKeys(keys, "k2:\(SigningFixture.base64Secret)\n")
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).output
            == ["checked 2 documents: 2 signed, 0 unsigned, 0 bad"])

        let times = data + "/user_settings/u1.json.times"
        let text = try String(contentsOfFile: times, encoding: .utf8)
        try Data(text.replacingOccurrences(of: "20260518T100100", with: "20990101T000000").utf8).write(to: URL(fileURLWithPath: times))
        let tampered = AdminCommand.run(["verify", "--keys", keys, data], environment: [:])
        #expect(tampered.status == 1)
        #expect(tampered.errors.count == 1)
        #expect(tampered.errors.first?.hasPrefix("BAD \(times): MAC does not match") == true)
    }

    @Test(arguments: ["yes", "true", "0"])
    func requireOtherThanOneIsRefusedSayingWhat(_ value: String) {
        let result = AdminCommand.run(["verify", "/tmp"], environment: ["MOCKCLOUD_HMAC_REQUIRE": value])
        #expect(result.status == 2)
        #expect(result.errors == ["mockcloud-admin: MOCKCLOUD_HMAC_REQUIRE=\(value) is not accepted: set it to 1 to refuse unsigned documents, or leave it unset"])
    }

    @Test func theAdminToolExplainsItsUsage() {
        let result = AdminCommand.run(["frobnicate"], environment: [:])
        #expect(result.status == 2)
        #expect(result.errors.first?.hasPrefix("usage: mockcloud-admin") == true)
        #expect(AdminCommand.run(["verify", "/tmp"], environment: [:]).errors
                == ["mockcloud-admin: no keys: set MOCKCLOUD_HMAC_KEYS or pass --keys FILE"])
    }

    @Test func adminTokenPrintsTheTokenOnceAndStoresOnlyItsHash() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path + "/tokens"
        let first = AdminCommand.run(["token", file, "phone"], environment: [:])
        let second = AdminCommand.run(["token", file], environment: [:])
        #expect(first.status == 0 && second.status == 0)
        let tokens = [first.output[0], second.output[0]]
        let text = try String(contentsOfFile: file, encoding: .utf8)
        for token in tokens { #expect(!text.contains(token)) }
        #expect(text.split(separator: "\n").count == 2)
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let stored = try AccessTokens.parse(Array(text.utf8), path: file)
        for token in tokens { #expect(stored.accepts(token: token)) }
        #expect(!stored.accepts(token: "mct_nope"))
        #expect(AdminCommand.run(["token", file, "bad label"], environment: [:]).status == 2)
    }
}
