import Foundation
import MockCloudCore
import Testing

/// HMAC-SHA256 on the RFC 4231 vectors, the key file's rules, MAC sidecars,
/// and what the admin tool finds in a data directory.
@Suite struct SigningTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }

    /// RFC 4231 section 4: key, data, HMAC-SHA-256 (test case 5 is truncated to 128 bits).
    static let vectors: [(String, [UInt8], [UInt8], String)] = [
        ("1", repeated(0x0b, 20), bytes("Hi There"),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("2", bytes("Jefe"), bytes("what do ya want for nothing?"),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("3", repeated(0xaa, 20), repeated(0xdd, 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("4", Array(1...25), repeated(0xcd, 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ("5", repeated(0x0c, 20), bytes("Test With Truncation"), "a3b6167473100ee06e0c796c2955552b"),
        ("6", repeated(0xaa, 131), bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ("7", repeated(0xaa, 131),
         bytes("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: vectors)
    func hmacMatchesTheRFC4231Vectors(vector: (String, [UInt8], [UInt8], String)) {
        let (_, key, data, expected) = vector
        let mac = ASCII.hex(HMACSHA256(key: key).authenticationCode(for: [data]))
        #expect(mac.hasPrefix(expected))
        #expect(mac.count == 64)
    }

    @Test func theMACOfSplitPartsEqualsTheMACOfTheirConcatenation() {
        let hmac = HMACSHA256(key: Self.repeated(7, 32))
        #expect(hmac.authenticationCode(for: [Self.bytes("ab"), Self.bytes("cd")])
                == hmac.authenticationCode(for: [Self.bytes("abcd")]))
    }

    @Test func isValidChecksTheLengthAndEveryByte() {
        let hmac = HMACSHA256(key: Self.repeated(1, 32))
        let mac = hmac.authenticationCode(for: [Self.bytes("doc")])
        #expect(hmac.isValid(mac: mac, for: [Self.bytes("doc")]))
        #expect(!hmac.isValid(mac: mac, for: [Self.bytes("dod")]))
        #expect(!hmac.isValid(mac: Array(mac.dropLast()), for: [Self.bytes("doc")]))
        #expect(!hmac.isValid(mac: [], for: [Self.bytes("doc")]))
        var flipped = mac
        flipped[31] ^= 1
        #expect(!hmac.isValid(mac: flipped, for: [Self.bytes("doc")]))
    }

    // MARK: - Key file

    static let hexSecret = String(repeating: "ab", count: 32)
    static let base64Secret = Data(repeating: 0x5a, count: 32).base64EncodedString()

    @Test func keyFilesAcceptHexAndBase64CommentsAndBlankLinesAndKeepTheOrder() throws {
        let text = "# keys\n\nnew:\(Self.hexSecret)\r\nold:\(Self.base64Secret)\n"
        let keys = try SigningKeys.parse(Self.bytes(text), path: "k")
        #expect(keys.keys.map(\.id) == ["new", "old"])
        #expect(keys.current.id == "new")
        let hexMAC = keys.current.hmac.authenticationCode(for: [Self.bytes("x")])
        #expect(hexMAC == HMACSHA256(key: Self.repeated(0xab, 32)).authenticationCode(for: [Self.bytes("x")]))
        let b64MAC = keys.key(id: "old")!.hmac.authenticationCode(for: [Self.bytes("x")])
        #expect(b64MAC == HMACSHA256(key: Self.repeated(0x5a, 32)).authenticationCode(for: [Self.bytes("x")]))
    }

    @Test(arguments: [
        ("k1:\(String(repeating: "ab", count: 31))\n", "HMAC key file /keys, line 1: secret of key k1 is 31 bytes; at least 32 are needed"),
        ("just-a-secret\n", "HMAC key file /keys, line 1: expected key-id:secret"),
        ("k/1:\(hexSecret)\n", "HMAC key file /keys, line 1: key id must be 1-64 letters, digits, '.', '_' or '-'"),
        ("k1:\(hexSecret)\nk1:\(hexSecret)\n", "HMAC key file /keys, line 2: key id k1 appears twice"),
        ("k1:not base64!\n", "HMAC key file /keys, line 1: secret of key k1 is neither hex nor base64"),
        ("# nothing\n\n", "HMAC key file /keys holds no key"),
        // Comments, blank lines and CRLF count as lines; the bad one is trimmed first.
        ("# c\n\n \tbad\r\n", "HMAC key file /keys, line 3: expected key-id:secret"),
        ("k1:\(hexSecret)\r\n\n#\n  k1:\(hexSecret)  \n", "HMAC key file /keys, line 4: key id k1 appears twice"),
    ])
    func malformedKeyFilesAreRefusedWithAMessageThatNamesTheProblemNotTheSecret(text: String, message: String) {
        #expect {
            try SigningKeys.parse(Self.bytes(text), path: "/keys")
        } throws: { error in
            guard let error = error as? KeyFileError else { return false }
            return error.message == message && error.status == 500 && !error.message.contains(Self.hexSecret.prefix(20))
        }
    }

    @Test func aKeyFileReadableByGroupOrOthersIsRefusedWithItsMode() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/keys"
        try Data("k1:\(Self.hexSecret)\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        #expect(throws: KeyFileError.tooOpen(path: path, mode: 0o100644)) { try SigningKeys.load(path: path) }
        #expect(KeyFileError.tooOpen(path: path, mode: 0o100644).message.contains("(mode 0644)"))
        chmod(path, 0o600)
        #expect(try SigningKeys.load(path: path).current.id == "k1")
    }

    @Test func aMissingKeyFileIsA500ThatSaysSo() {
        #expect(throws: KeyFileError.unreadable(path: "/nonexistent/keys", reason: "No such file or directory")) {
            try Integrity(environment: ["MOCKCLOUD_HMAC_KEYS": "/nonexistent/keys"])
        }
    }

    @Test func requireWithoutKeysIsAMisconfiguration() {
        #expect(throws: ServerError.self) { try Integrity(environment: ["MOCKCLOUD_HMAC_REQUIRE": "1"]) }
    }

    // MARK: - Sidecars

    static func integrity(_ lines: String, require: Bool = false) throws -> Integrity {
        Integrity(keys: try SigningKeys.parse(bytes(lines), path: "k"), requireSigned: require)
    }

    static let place = DocumentPlace(route: "user_settings", key: UserKey("u1")!)

    @Test func aSidecarVerifiesItsDocumentAndNothingElse() throws {
        let integrity = try Self.integrity("k1:\(Self.hexSecret)\n")
        let doc = Self.bytes("{\n  \"a\": 1\n}")
        let sidecar = try #require(integrity.sidecar(for: doc, at: Self.place))
        #expect(String(decoding: sidecar, as: UTF8.self).hasPrefix("mockcloud-hmac-sha256 1\nk1 "))
        #expect(integrity.verdict(for: doc, sidecar: sidecar, at: Self.place) == .signed(keyID: "k1"))
        #expect(integrity.verdict(for: doc, sidecar: nil, at: Self.place) == .unsigned)
        var edited = doc
        edited[8] = UInt8(ascii: "2")
        #expect(integrity.verdict(for: edited, sidecar: sidecar, at: Self.place)
                == .invalid(reason: "MAC does not match the content and place of the file"))
        for other in [
            DocumentPlace(route: "user_settings", key: UserKey("u2")!),
            DocumentPlace(route: "inbox", key: UserKey("u1")!),
            DocumentPlace(route: "user_settings", key: UserKey("u1")!, id: "x"),
        ] {
            #expect(integrity.verdict(for: doc, sidecar: sidecar, at: other) != .signed(keyID: "k1"))
        }
        #expect(integrity.verdict(for: doc, sidecar: Self.bytes("garbage\n"), at: Self.place)
                == .invalid(reason: "sidecar is not a mockcloud MAC file"))
    }

    @Test func sidecarLinesMayHaveBlankLinesAndExtraSpacesButNotAThirdField() throws {
        let integrity = try Self.integrity("k1:\(Self.hexSecret)\n")
        let doc = Self.bytes("{}")
        let sidecar = String(decoding: try #require(integrity.sidecar(for: doc, at: Self.place)), as: UTF8.self)
        let line = try #require(sidecar.split(separator: "\n").last)
        let fields = line.split(separator: " ")
        for tolerated in [
            "\n\nmockcloud-hmac-sha256 1\n\n\(line)\n\n",
            "mockcloud-hmac-sha256 1\n  \(fields[0])   \(fields[1])  ",
            "mockcloud-hmac-sha256 1\nk0 \(String(repeating: "0", count: 64))\n\(line)",
        ] {
            #expect(integrity.verdict(for: doc, sidecar: Self.bytes(tolerated), at: Self.place) == .signed(keyID: "k1"),
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
            #expect(integrity.verdict(for: doc, sidecar: Self.bytes(malformed), at: Self.place) == .invalid(reason: reason),
                    "\(malformed)")
        }
    }

    @Test func rotationKeepsOldDocumentsValidUntilTheOldKeyIsDropped() throws {
        let old = try Self.integrity("k1:\(Self.hexSecret)\n")
        let doc = Self.bytes("{}")
        let sidecar = try #require(old.sidecar(for: doc, at: Self.place))
        let rotated = try Self.integrity("k2:\(Self.base64Secret)\nk1:\(Self.hexSecret)\n")
        #expect(rotated.verdict(for: doc, sidecar: sidecar, at: Self.place) == .signed(keyID: "k1"))
        #expect(String(decoding: rotated.sidecar(for: doc, at: Self.place)!, as: UTF8.self).contains("\nk2 "))
        let dropped = try Self.integrity("k2:\(Self.base64Secret)\n")
        #expect(dropped.verdict(for: doc, sidecar: sidecar, at: Self.place)
                == .invalid(reason: "signed with key k1, which the key file no longer holds"))
    }

    @Test func aCrashBetweenTheSidecarAndTheRenameLeavesAValidPair() throws {
        let integrity = try Self.integrity("k1:\(Self.hexSecret)\n")
        let old = Self.bytes("{\"v\": 1}"), new = Self.bytes("{\"v\": 2}")
        // The first step of a signed write: a sidecar valid for both.
        let transitional = try #require(integrity.sidecar(for: new, at: Self.place, alsoValid: [old]))
        #expect(integrity.verdict(for: old, sidecar: transitional, at: Self.place) == .signed(keyID: "k1"))
        #expect(integrity.verdict(for: new, sidecar: transitional, at: Self.place) == .signed(keyID: "k1"))
    }

    // MARK: - Signed folders and routes

    @Test func aSignedWriteLeavesTheNewMACAloneAndAnEditedFileIsNotServed() throws {
        let dir = try TemporaryDirectory()
        let integrity = try Self.integrity("k1:\(Self.hexSecret)\n")
        let folder = DocumentFolder(directory: dir.path + "/user_settings", integrity: integrity)
        try folder.write(Self.bytes("{\"v\": 1}"), to: "u1.json", at: Self.place, replacing: nil)
        try folder.write(Self.bytes("{\"v\": 2}"), to: "u1.json", at: Self.place, replacing: Self.bytes("{\"v\": 1}"))
        let sidecar = try String(contentsOfFile: dir.path + "/user_settings/u1.json.mac", encoding: .utf8)
        #expect(sidecar.split(separator: "\n").count == 2)
        #expect(try folder.read("u1.json", at: Self.place) == Self.bytes("{\"v\": 2}"))

        try Data("{\"v\": 3}".utf8).write(to: URL(fileURLWithPath: dir.path + "/user_settings/u1.json"))
        #expect(throws: IntegrityError.self) { try folder.read("u1.json", at: Self.place) }
    }

    @Test func unsignedLegacyFilesAreServedUnlessSignaturesAreRequired() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/user_settings", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dir.path + "/user_settings/u1.json"))
        let lenient = DocumentFolder(directory: dir.path + "/user_settings", integrity: try Self.integrity("k1:\(Self.hexSecret)\n"))
        #expect(try lenient.read("u1.json", at: Self.place) == Self.bytes("{}"))
        let strict = DocumentFolder(
            directory: dir.path + "/user_settings", integrity: try Self.integrity("k1:\(Self.hexSecret)\n", require: true))
        #expect(throws: IntegrityError(file: dir.path + "/user_settings/u1.json", reason: "unsigned, and MOCKCLOUD_HMAC_REQUIRE=1")) {
            try strict.read("u1.json", at: Self.place)
        }
    }

    @Test func writingWithSigningOffRemovesAStaleSidecar() throws {
        let dir = try TemporaryDirectory()
        let signed = DocumentFolder(directory: dir.path, integrity: try Self.integrity("k1:\(Self.hexSecret)\n"))
        try signed.write(Self.bytes("{}"), to: "u1.json", at: Self.place, replacing: nil)
        #expect(FileManager.default.fileExists(atPath: dir.path + "/u1.json.mac"))
        try DocumentFolder(directory: dir.path, integrity: .off).write(Self.bytes("{\"a\": 1}"), to: "u1.json", at: Self.place, replacing: nil)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/u1.json.mac"))
        #expect(try signed.read("u1.json", at: Self.place) == Self.bytes("{\"a\": 1}"))
    }

    @Test func settingsCopiedFromAnotherUserFailTheirCheck() throws {
        let dir = try TemporaryDirectory()
        let integrity = try Self.integrity("k1:\(Self.hexSecret)\n")
        let route = SettingsRoute(dataRoot: dir.path, integrity: integrity, clock: { 0 })
        for key in ["u1", "u2"] {
            let put = try route.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": key], body: Self.bytes("{\"who\": \"\(key)\"}")))
            #expect(put.status == 200)
        }
        for suffix in [".json", ".json.mac"] {
            let from = dir.path + "/user_settings/u2" + suffix, to = dir.path + "/user_settings/u1" + suffix
            try FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
        #expect {
            try route.respond(to: CGIRequest(method: "GET", path: "/user/settings", headers: ["X-User-Key": "u1"]))
        } throws: { error in
            (error as? IntegrityError)?.message == "stored data failed its integrity check"
        }
    }

    @Test func inboxMessagesAreSignedAndATamperedOneStopsTheFeed() throws {
        let dir = try TemporaryDirectory()
        let route = InboxRoute(dataRoot: dir.path, integrity: try Self.integrity("k1:\(Self.hexSecret)\n"), clock: { 0 })
        let put = try route.respond(to: CGIRequest(method: "PUT", path: "/inbox/m1", headers: ["X-User-Key": "u1"], body: Self.bytes("{\"kg\": 70}")))
        #expect(put.status == 201)
        let file = dir.path + "/inbox/u1/messages/m1.json"
        #expect(FileManager.default.fileExists(atPath: file + ".mac"))
        let feed = try route.respond(to: CGIRequest(method: "GET", path: "/inbox", headers: ["X-User-Key": "u1"]))
        #expect(feed.status == 200)
        let text = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "70", with: "99")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: IntegrityError.self) {
            try route.respond(to: CGIRequest(method: "GET", path: "/inbox", headers: ["X-User-Key": "u1"]))
        }
        #expect(throws: IntegrityError.self) {
            try route.respond(to: CGIRequest(method: "GET", path: "/inbox/m1", headers: ["X-User-Key": "u1"]))
        }
    }

    // MARK: - mockcloud-admin

    @Test func verifyFindsEveryTamperedFileAmongManyAndExitsOne() throws {
        let dir = try TemporaryDirectory()
        let keys = dir.path + "/keys"
        try writeKeys(keys, "k1:\(Self.hexSecret)\n")
        let integrity = try Integrity(environment: ["MOCKCLOUD_HMAC_KEYS": keys])
        let data = dir.path + "/data"
        let settings = SettingsRoute(dataRoot: data, integrity: integrity, clock: { 0 })
        let inbox = InboxRoute(dataRoot: data, integrity: integrity, clock: { 0 })
        for i in 0..<300 {
            _ = try settings.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u\(i)"], body: Self.bytes("{\"i\": \(i)}")))
            _ = try inbox.respond(to: CGIRequest(method: "PUT", path: "/inbox/m\(i % 7)", headers: ["X-User-Key": "u\(i % 3)", "X-Sync-Version": "\(i)"], body: Self.bytes("{}")))
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
            .respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "legacy"], body: Self.bytes("{}")))
        let keys = dir.path + "/keys"
        try writeKeys(keys, "k1:\(Self.hexSecret)\n")
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).status == 1)
        let signed = AdminCommand.run(["sign", "--keys", keys, data], environment: [:])
        #expect(signed.output == ["signed 1 documents with key k1; 0 already were; 0 bad"])
        #expect(AdminCommand.run(["verify", "--require", "--keys", keys, data], environment: [:]).status == 0)

        try writeKeys(keys, "k2:\(Self.base64Secret)\nk1:\(Self.hexSecret)\n")
        let rotated = AdminCommand.run(["rotate", "--keys", keys, data], environment: [:])
        #expect(rotated.output == ["re-signed 1 documents with key k2; 0 already were; 0 bad"])
        try writeKeys(keys, "k2:\(Self.base64Secret)\n")
        #expect(AdminCommand.run(["verify", "--keys", keys, data], environment: [:]).status == 0)
    }

    @Test func theAdminToolExplainsItsUsage() {
        let result = AdminCommand.run(["frobnicate"], environment: [:])
        #expect(result.status == 2)
        #expect(result.errors.first?.hasPrefix("usage: mockcloud-admin") == true)
        #expect(AdminCommand.run(["verify", "/tmp"], environment: [:]).errors
                == ["mockcloud-admin: no keys: set MOCKCLOUD_HMAC_KEYS or pass --keys FILE"])
    }
}

/// Writes a key file with mode 0600.
func writeKeys(_ path: String, _ text: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o600)
}
