import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// `^[A-Za-z0-9_-]{1,128}$` and nothing else becomes part of a path.
@Suite struct UserKeyTests {
    @Test(arguments: [
        "a", "Z", "0", "_", "-", "u1", "AZaz09_-", "--", String(repeating: "k", count: 128),
        "d41d8cd9-8f00-b204-e980-0998ecf8427e",
    ])
    func keysOfTheAllowedShapeAreAccepted(_ raw: String) {
        #expect(Identifier.isValidUserKey(raw))
        #expect(UserKey(raw)?.rawValue == raw)
        #expect(UserKey(raw)?.description == raw)
    }

    @Test(arguments: [
        "", "../etc", "..", ".", "a/b", "/etc", "a.b", "a b", " a", "a ", "a\n", "a\0b", "a\\b", "%2e%2e",
        "a:b", "a+b", "é", "ß", "ａ", "😀", "k\u{301}", String(repeating: "k", count: 129),
        String(repeating: "k", count: 127) + "é",
    ])
    func keysOfAnyOtherShapeAreRefused(_ raw: String) {
        #expect(!Identifier.isValidUserKey(raw))
        #expect(UserKey(raw) == nil)
    }
}
