import MockCloudJSON
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// The strict parser keeps what the client sent (order, number text, strings)
/// and refuses everything RFC 8259 refuses, saying where.
@Suite struct JSONParserTests {
    @Test func objectMembersKeepTheirOrder() throws {
        let value = try json(#"{"zeta": 1, "alpha": 2, "mid": 3}"#)
        #expect(value.objectValue?.members.map(\.key) == ["zeta", "alpha", "mid"])
    }

    @Test(arguments: [
        "0", "-0", "-0.0", "0.9990998620664758", "12345678901234567890", "1.50e3", "1E+2", "1e-7",
        "-12.5E-10", "100000000000000000000000000000000000001", "2.0",
    ])
    func numbersKeepTheirLiteralText(_ text: String) throws {
        #expect(try json("[\(text)]") == .array([.number(text)]))
        #expect(compactText(try json(text)) == text)
    }

    @Test(arguments: [
        (#""caf\u00e9""#, "café"),
        (#""caf\u00E9""#, "café"),
        (#""\ud83d\ude00""#, "😀"),
        (#""\/a\/b""#, "/a/b"),
        (#""\b\f\n\r\t\"\\""#, "\u{8}\u{c}\n\r\t\"\\"),
        (#""a\u0000b""#, "a\u{0}b"),
        ("\"café 😀\"", "café 😀"),
        (#""plain ascii, then \n an escape""#, "plain ascii, then \n an escape"),
        ("\"\u{7f}\"", "\u{7f}"),
    ])
    func stringsAreDecoded(_ text: String, _ expected: String) throws {
        #expect(try json(text) == .string(expected))
    }

    @Test func literalsAndWhitespaceAreAccepted() throws {
        let value = try json(" \t\r\n{ \"a\" : [ true , false , null ] }\n ")
        #expect(value == .object(JSONObject([JSONMember("a", .array([.bool(true), .bool(false), .null]))])))
    }

    @Test func duplicateKeysKeepTheFirstPositionAndTheLastValueAsPythonDoes() throws {
        let value = try json(#"{"a": 1, "b": 2, "a": 3}"#)
        #expect(compactText(value) == #"{"a": 3, "b": 2}"#)
    }

    @Test(arguments: [1, 31, 32, 33, 40, 200])
    func duplicateKeysInObjectsOfAnySizeKeepTheirFirstPosition(_ size: Int) throws {
        // Small objects and large ones find duplicates differently; both must agree with Python.
        let members = (0..<size).map { #""k\#($0)": \#($0)"# }
        let text = "{" + (members + [#""k0": "last""#, #""k\#(size - 1)": "end""#]).joined(separator: ", ") + "}"
        let object = try #require(try json(text).objectValue)
        #expect(object.count == size)
        #expect(object.members.map(\.key) == (0..<size).map { "k\($0)" })
        #expect(object["k0"] == (size == 1 ? .string("end") : .string("last")))
        #expect(object["k\(size - 1)"] == .string("end"))
    }

    @Test func aUTF8ByteOrderMarkIsIgnoredAsPythonDoesForBytes() throws {
        #expect(try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array(#"{"a": 1}"#.utf8)) == json(#"{"a": 1}"#))
    }

    /// (input, byte offset, reason): every refusal names where it went wrong.
    @Test(arguments: [
        ("", 0, "unexpected end of input"),
        ("   ", 3, "unexpected end of input"),
        ("[", 1, "unexpected end of input"),
        ("{", 1, "expected a member name in double quotes"),
        ("[1,]", 3, "unexpected character"),
        (#"{"a":1,}"#, 7, "expected a member name in double quotes"),
        ("{a:1}", 1, "expected a member name in double quotes"),
        ("{'a':1}", 1, "expected a member name in double quotes"),
        (#"{"a" 1}"#, 5, "expected ':' after a member name"),
        ("[1 2]", 3, "expected ',' or ']' in an array"),
        (#"{"a":1 "b":2}"#, 7, "expected ',' or '}' in an object"),
        ("01", 1, "unexpected data after the JSON value"),
        ("1 2", 2, "unexpected data after the JSON value"),
        ("[1] x", 4, "unexpected data after the JSON value"),
        ("nulll", 4, "unexpected data after the JSON value"),
        ("1.", 2, "invalid number: digits must follow '.'"),
        ("1.e5", 2, "invalid number: digits must follow '.'"),
        (".5", 0, "unexpected character"),
        ("+1", 0, "unexpected character"),
        ("-", 1, "invalid number"),
        ("-a", 1, "invalid number"),
        ("1e", 2, "invalid number: digits must follow the exponent"),
        ("1e+", 3, "invalid number: digits must follow the exponent"),
        ("tru", 0, "invalid literal"),
        ("nul", 0, "invalid literal"),
        ("True", 0, "unexpected character"),
        ("'a'", 0, "unexpected character"),
        ("NaN", 0, "unexpected character"),
        ("Infinity", 0, "unexpected character"),
        ("-Infinity", 1, "invalid number"),
        (#""\x""#, 2, "invalid escape"),
        ("\"\\", 2, "unterminated escape"),
        (#""\ud800""#, 7, #"unpaired surrogate in \u escape"#),
        (#""\udc00""#, 7, #"unpaired surrogate in \u escape"#),
        (#""\ud800\u0041""#, 13, #"unpaired surrogate in \u escape"#),
        (#""\u12""#, 3, #"incomplete \u escape"#),
        (#""\u12G4""#, 5, #"invalid hex digit in \u escape"#),
        ("\"a\nb\"", 2, "control character in a string"),
        ("\"a\u{1}\"", 2, "control character in a string"),
        ("\"abc", 4, "unterminated string"),
    ])
    func invalidTextIsRefusedWithItsOffset(_ text: String, _ offset: Int, _ reason: String) {
        #expect(throws: JSONError.invalid(offset: offset, reason: reason)) { try json(text) }
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22],  // a byte that is never UTF-8
        [0x22, 0xC0, 0xAF, 0x22],  // overlong "/"
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // an encoded surrogate
        [0x22, 0x61, 0xC3, 0x22],  // a truncated sequence
    ] as [[UInt8]])
    func stringsThatAreNotUTF8AreRefused(_ bytes: [UInt8]) {
        #expect(throws: JSONError.invalid(offset: 1, reason: "string is not valid UTF-8")) {
            try JSONParser.parse(bytes)
        }
    }

    @Test func aByteOrderMarkAloneIsNotADocument() {
        #expect(throws: JSONError.invalid(offset: 3, reason: "unexpected end of input")) {
            try JSONParser.parse([0xEF, 0xBB, 0xBF])
        }
    }

    @Test func nonFiniteNumbersAreAcceptedOnlyWhenAsked() throws {
        let value = try json("[NaN, Infinity, -Infinity, -1]", allowNonFinite: true)
        #expect(value == .array([.number("NaN"), .number("Infinity"), .number("-Infinity"), .number("-1")]))
        #expect(compactText(value) == "[NaN, Infinity, -Infinity, -1]")
        #expect(throws: JSONError.invalid(offset: 1, reason: "unexpected character")) {
            try json("[NaN]")
        }
    }

    @Test(arguments: [("Nan", 0, "invalid literal"), ("-Inf", 1, "invalid number"), ("Infinit", 0, "invalid literal")])
    func misspelledNonFiniteNumbersAreRefusedEvenWhenAllowed(_ text: String, _ offset: Int, _ reason: String) {
        #expect(throws: JSONError.invalid(offset: offset, reason: reason)) {
            try json(text, allowNonFinite: true)
        }
    }

    static func nestedArrays(_ depth: Int, innermost: String = "") -> String {
        String(repeating: "[", count: depth) + innermost + String(repeating: "]", count: depth)
    }

    @Test func sixtyFourNestedContainersAreAccepted() throws {
        var expected = JSONValue.array([])
        for _ in 1..<64 { expected = .array([expected]) }
        #expect(try json(Self.nestedArrays(64)) == expected)
    }

    @Test func sixtyFiveNestedContainersAreRefusedAsTooDeep() {
        #expect(throws: JSONError.tooDeep(limit: 64)) { try json(Self.nestedArrays(65)) }
    }

    /// The contract counts values, not brackets: the top value is level 1, so a
    /// scalar inside the 64th array is at level 65.
    @Test func aScalarCountsAsALevel() throws {
        _ = try json(Self.nestedArrays(63, innermost: "1"))
        #expect(throws: JSONError.tooDeep(limit: 64)) { try json(Self.nestedArrays(64, innermost: "1")) }
    }

    @Test func hugeNestingIsRefusedWithoutExhaustingTheStack() {
        #expect(throws: JSONError.tooDeep(limit: 64)) { try json(Self.nestedArrays(200_000)) }
        #expect(throws: JSONError.tooDeep(limit: 64)) {
            try json(String(repeating: #"{"a":"#, count: 200_000))
        }
    }

    @Test func theDepthLimitCanBeLowered() throws {
        #expect(try JSONParser.parse(Array("[]".utf8), maxDepth: 1) == .array([]))
        #expect(throws: JSONError.tooDeep(limit: 1)) { try JSONParser.parse(Array("[1]".utf8), maxDepth: 1) }
    }

    @Test func errorsDescribeThemselves() {
        #expect(JSONError.invalid(offset: 7, reason: "unexpected character").description == "unexpected character at byte 7")
        #expect(JSONError.tooDeep(limit: 64).description == "JSON nested deeper than 64 levels")
    }
}
