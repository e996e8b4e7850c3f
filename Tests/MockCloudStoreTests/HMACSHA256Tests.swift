import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// HMAC-SHA256 on the RFC 4231 vectors.
@Suite struct HMACSHA256Tests {
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
}
