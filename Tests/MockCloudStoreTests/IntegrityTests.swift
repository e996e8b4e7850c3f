import Foundation
import MockCloudStore
import MockCloudTestSupport
import MockCloudWire
import Testing

/// MAC sidecars: what verifies, rotation, crashes mid-write, signed folders.
@Suite struct IntegrityTests {
    @Test func aSidecarVerifiesItsDocumentAndNothingElse() throws {
        let integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let doc = SigningFixture.bytes("{\n  \"a\": 1\n}")
        let sidecar = try #require(integrity.sidecar(for: doc, at: SigningFixture.place))
        #expect(String(decoding: sidecar, as: UTF8.self).hasPrefix("mockcloud-hmac-sha256 1\nk1 "))
        #expect(integrity.verdict(for: doc, sidecar: sidecar, at: SigningFixture.place) == .signed(keyID: "k1"))
        #expect(integrity.verdict(for: doc, sidecar: nil, at: SigningFixture.place) == .unsigned)
        var edited = doc
        edited[8] = UInt8(ascii: "2")
        #expect(integrity.verdict(for: edited, sidecar: sidecar, at: SigningFixture.place)
                == .invalid(reason: "MAC does not match the content and place of the file"))
        for other in [
            DocumentPlace(store: .userSettings, key: UserKey("u2")!),
            DocumentPlace(store: .inbox, key: UserKey("u1")!),
            DocumentPlace(store: .userSettings, key: UserKey("u1")!, id: MessageID("x")),
        ] {
            #expect(integrity.verdict(for: doc, sidecar: sidecar, at: other) != .signed(keyID: "k1"))
        }
        #expect(integrity.verdict(for: doc, sidecar: SigningFixture.bytes("garbage\n"), at: SigningFixture.place)
                == .invalid(reason: "sidecar is not a mockcloud MAC file"))
    }

    @Test func sidecarLinesMayHaveBlankLinesAndExtraSpacesButNotAThirdField() throws {
        let integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let doc = SigningFixture.bytes("{}")
        let sidecar = String(decoding: try #require(integrity.sidecar(for: doc, at: SigningFixture.place)), as: UTF8.self)
        let line = try #require(sidecar.split(separator: "\n").last)
        let fields = line.split(separator: " ")
        for tolerated in [
            "\n\nmockcloud-hmac-sha256 1\n\n\(line)\n\n",
            "mockcloud-hmac-sha256 1\n  \(fields[0])   \(fields[1])  ",
            "mockcloud-hmac-sha256 1\nk0 \(String(repeating: "0", count: 64))\n\(line)",
        ] {
            #expect(integrity.verdict(for: doc, sidecar: SigningFixture.bytes(tolerated), at: SigningFixture.place) == .signed(keyID: "k1"),
                    "\(tolerated)")
        }
        for (malformed, reason) in [
            ("mockcloud-hmac-sha256 1\n\(line) extra", "sidecar line is malformed"),
            ("mockcloud-hmac-sha256 1\n\(fields[0])", "sidecar line is malformed"),
            ("mockcloud-hmac-sha256 1\nk1 zz", "sidecar line is malformed"),
            ("mockcloud-hmac-sha256 2\n\(line)", "sidecar is not a mockcloud MAC file"),
            ("", "sidecar is not a mockcloud MAC file"),
            ("mockcloud-hmac-sha256 1\nk9 \(fields[1])", "signed with key k9, which the key file no longer holds"),
            ("mockcloud-hmac-sha256 1\n", "MAC does not match the content and place of the file"),
        ] {
            #expect(integrity.verdict(for: doc, sidecar: SigningFixture.bytes(malformed), at: SigningFixture.place) == .invalid(reason: reason),
                    "\(malformed)")
        }
    }

    @Test func rotationKeepsOldDocumentsValidUntilTheOldKeyIsDropped() throws {
        let old = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let doc = SigningFixture.bytes("{}")
        let sidecar = try #require(old.sidecar(for: doc, at: SigningFixture.place))
        let rotated = try SigningFixture.integrity("k2:\(SigningFixture.base64Secret)\nk1:\(SigningFixture.hexSecret)\n")
        #expect(rotated.verdict(for: doc, sidecar: sidecar, at: SigningFixture.place) == .signed(keyID: "k1"))
        #expect(String(decoding: rotated.sidecar(for: doc, at: SigningFixture.place)!, as: UTF8.self).contains("\nk2 "))
        let dropped = try SigningFixture.integrity("k2:\(SigningFixture.base64Secret)\n")
        #expect(dropped.verdict(for: doc, sidecar: sidecar, at: SigningFixture.place)
                == .invalid(reason: "signed with key k1, which the key file no longer holds"))
    }

    @Test func aCrashBetweenTheSidecarAndTheRenameLeavesAValidPair() throws {
        let integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let old = SigningFixture.bytes("{\"v\": 1}"), new = SigningFixture.bytes("{\"v\": 2}")
        // The first step of a signed write: a sidecar valid for both.
        let transitional = try #require(integrity.sidecar(for: new, at: SigningFixture.place, alsoValid: [old]))
        #expect(integrity.verdict(for: old, sidecar: transitional, at: SigningFixture.place) == .signed(keyID: "k1"))
        #expect(integrity.verdict(for: new, sidecar: transitional, at: SigningFixture.place) == .signed(keyID: "k1"))
    }

    // MARK: - Signed folders and routes

    @Test func aSignedWriteLeavesTheNewMACAloneAndAnEditedFileIsNotServed() throws {
        let dir = try TemporaryDirectory()
        let integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let folder = DocumentFolder(directory: dir.path + "/user_settings", integrity: integrity)
        try folder.write(SigningFixture.bytes("{\"v\": 1}"), to: "u1.json", at: SigningFixture.place, replacing: nil)
        try folder.write(SigningFixture.bytes("{\"v\": 2}"), to: "u1.json", at: SigningFixture.place, replacing: SigningFixture.bytes("{\"v\": 1}"))
        let sidecar = try String(contentsOfFile: dir.path + "/user_settings/u1.json.mac", encoding: .utf8)
        #expect(sidecar.split(separator: "\n").count == 2)
        #expect(try folder.read("u1.json", at: SigningFixture.place) == SigningFixture.bytes("{\"v\": 2}"))

        try Data("{\"v\": 3}".utf8).write(to: URL(fileURLWithPath: dir.path + "/user_settings/u1.json"))
        #expect(throws: IntegrityError.self) { try folder.read("u1.json", at: SigningFixture.place) }
    }

    @Test func unsignedLegacyFilesAreServedUnlessSignaturesAreRequired() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/user_settings", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dir.path + "/user_settings/u1.json"))
        let lenient = DocumentFolder(directory: dir.path + "/user_settings", integrity: try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n"))
        #expect(try lenient.read("u1.json", at: SigningFixture.place) == SigningFixture.bytes("{}"))
        let strict = DocumentFolder(
            directory: dir.path + "/user_settings", integrity: try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n", require: true))
        #expect(throws: IntegrityError(file: dir.path + "/user_settings/u1.json", reason: "unsigned, and MOCKCLOUD_HMAC_REQUIRE=1")) {
            try strict.read("u1.json", at: SigningFixture.place)
        }
    }

    @Test func writingWithSigningOffRemovesAStaleSidecar() throws {
        let dir = try TemporaryDirectory()
        let signed = DocumentFolder(directory: dir.path, integrity: try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n"))
        try signed.write(SigningFixture.bytes("{}"), to: "u1.json", at: SigningFixture.place, replacing: nil)
        #expect(FileManager.default.fileExists(atPath: dir.path + "/u1.json.mac"))
        try DocumentFolder(directory: dir.path, integrity: .off).write(SigningFixture.bytes("{\"a\": 1}"), to: "u1.json", at: SigningFixture.place, replacing: nil)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/u1.json.mac"))
        #expect(try signed.read("u1.json", at: SigningFixture.place) == SigningFixture.bytes("{\"a\": 1}"))
    }
}
