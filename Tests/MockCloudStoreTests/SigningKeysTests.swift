import Foundation
import MockCloudStore
import MockCloudTestSupport
import Testing

/// The key file's rules: hex or base64 secrets, comments, order, mode 0600.
@Suite struct SigningKeysTests {
    static let hexSecret = SigningFixture.hexSecret
    static func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }

    @Test func keyFilesAcceptHexAndBase64CommentsAndBlankLinesAndKeepTheOrder() throws {
        let text = "# keys\n\nnew:\(SigningFixture.hexSecret)\r\nold:\(SigningFixture.base64Secret)\n"
        let keys = try SigningKeys.parse(SigningFixture.bytes(text), path: "k")
        #expect(keys.keys.map(\.id) == ["new", "old"])
        #expect(keys.current.id == "new")
        let hexMAC = keys.current.hmac.authenticationCode(for: [SigningFixture.bytes("x")])
        #expect(hexMAC == HMACSHA256(key: Self.repeated(0xab, 32)).authenticationCode(for: [SigningFixture.bytes("x")]))
        let b64MAC = keys.key(id: "old")!.hmac.authenticationCode(for: [SigningFixture.bytes("x")])
        #expect(b64MAC == HMACSHA256(key: Self.repeated(0x5a, 32)).authenticationCode(for: [SigningFixture.bytes("x")]))
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
            try SigningKeys.parse(SigningFixture.bytes(text), path: "/keys")
        } throws: { error in
            guard let error = error as? KeyFileError else { return false }
            return error.message == message && !error.message.contains(SigningFixture.hexSecret.prefix(20))
        }
    }

    @Test func aKeyFileReadableByGroupOrOthersIsRefusedWithItsMode() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/keys"
        try Data("k1:\(SigningFixture.hexSecret)\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        #expect(throws: KeyFileError.tooOpen(path: path, mode: 0o100644)) { try SigningKeys.load(path: path) }
        #expect(KeyFileError.tooOpen(path: path, mode: 0o100644).message.contains("(mode 0644)"))
        chmod(path, 0o600)
        #expect(try SigningKeys.load(path: path).current.id == "k1")
    }
}
