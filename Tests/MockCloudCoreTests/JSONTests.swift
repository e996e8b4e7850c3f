import MockCloudCore
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

/// The printer writes what Python's `json.dumps` writes, byte for byte.
@Suite struct JSONPrinterTests {
    static let sample = #"{"a": {"b": [1, 2, {}], "c": [], "d": {}}, "e": "x"}"#

    @Test func compactMatchesPythonJSONDumps() throws {
        // python3 -c 'import json; print(json.dumps({"a": {"b": [1, 2, {}], "c": [], "d": {}}, "e": "x"}))'
        #expect(compactText(try json(#"{"a":{"b":[1,2,{}],"c":[],"d":{}},"e":"x"}"#)) == Self.sample)
    }

    @Test func prettyMatchesPythonJSONDumpsWithIndentTwo() throws {
        // The same document through json.dumps(..., indent=2): no trailing newline.
        #expect(prettyText(try json(Self.sample)) == """
            {
              "a": {
                "b": [
                  1,
                  2,
                  {}
                ],
                "c": [],
                "d": {}
              },
              "e": "x"
            }
            """)
    }

    @Test(arguments: [
        ("null", "null"), ("true", "true"), ("false", "false"), ("1.50e3", "1.50e3"), (#""x""#, #""x""#),
        ("[]", "[]"), ("{}", "{}"), ("[[]]", "[\n  []\n]"), (#"{"k": {}}"#, "{\n  \"k\": {}\n}"),
    ])
    func prettyPrintsScalarsAndEmptyContainersAsPythonDoes(_ text: String, _ expected: String) throws {
        #expect(prettyText(try json(text)) == expected)
    }

    /// Python's `ensure_ascii`: printable ASCII as is (`/` too), the short
    /// escapes, everything else `\uXXXX` in lowercase hex, surrogate pairs
    /// above U+FFFF.
    @Test(arguments: [
        ("plain / text", #""plain / text""#),
        ("é", #""\u00e9""#),
        ("😀", #""\ud83d\ude00""#),
        ("\u{10FFFF}", #""\udbff\udfff""#),
        ("\u{FFFF}", #""\uffff""#),
        ("\u{2028}", #""\u2028""#),
        ("\u{7F}", #""\u007f""#),
        ("\u{0}", #""\u0000""#),
        ("\u{1}\u{1F}", #""\u0001\u001f""#),
        ("\u{B}", #""\u000b""#),
        ("\"\\", #""\"\\""#),
        ("\n\r\t\u{8}\u{C}", #""\n\r\t\b\f""#),
        ("a\r\nb", #""a\r\nb""#),
        ("e\u{301}", #""e\u0301""#),
        ("~ ", #""~ ""#),
    ])
    func stringsAreEscapedAsPythonEnsureASCII(_ text: String, _ expected: String) {
        #expect(compactText(.string(text)) == expected)
    }

    @Test func memberNamesAreEscapedLikeStrings() {
        let value = JSONValue.object(JSONObject([JSONMember("clé/😀", .number("1"))]))
        #expect(compactText(value) == #"{"cl\u00e9/\ud83d\ude00": 1}"#)
    }

    @Test func everyOutputByteIsASCII() throws {
        let value = try json("[\"é😀\u{7f}\", {\"ü\": \"\u{2028}\"}]")
        #expect(JSONPrinter.compact(value).allSatisfy { $0 < 0x80 })
        #expect(JSONPrinter.pretty(value).allSatisfy { $0 < 0x80 })
    }

    @Test func parsingAndPrintingPythonOutputGivesTheSameBytes() throws {
        // What Python writes for a real settings file, non-ASCII and all.
        let file = #"""
            {
              "updatedAt": "20260518T044304.095000Z",
              "name": "caf\u00e9 \ud83d\ude00",
              "units": {
                "weight": "kg",
                "list": [
                  1,
                  2.5,
                  null
                ]
              },
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """#
        #expect(prettyText(try json(file)) == file)
    }
}

/// A stored document in the printers' own form is compacted without a tree,
/// with exactly the bytes the tree would print; any other text is left to
/// the parser (`nil`).
@Suite struct JSONCompactFormTests {
    /// The compact form the parser and printer give a stored file.
    static func printed(_ text: String) throws -> String {
        let value = try JSONParser.parse(Array(text.utf8), maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true)
        return compactText(value)
    }

    static func compacted(_ text: String) -> String? {
        JSONParser.compactForm(ofStored: Array(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: [
        JSONPrinterTests.sample,
        #"{"calibrationFactor": 0.9990998620664758, "big": 12345678901234567890, "e": -1.5E+3}"#,
        #"{"t": true, "f": false, "n": null, "nan": NaN, "inf": [Infinity, -Infinity, -0]}"#,
        #"{"esc": "\"\\\n\r\t\b\f", "u": "caf\u00e9 \ud83d\ude00 \u007f \u0000 \u2028 \uffff"}"#,
        #"{"slash": "a/b", "": "", "nested": {"": {"": [[], {}, [{}]]}}}"#,
        #"["top", "level", 1]"#, #""just a string""#, "42", "null", "{}", "[]",
        " \t\r\n{\n\t\"a\" :\r\n1 , \"b\":[ 1,2 ] }\n ",
    ])
    func printedFormsCompactAsTheTreePrintsThem(_ text: String) throws {
        // Pretty (as stored), compact, and as given: the same answer as the tree's.
        let value = try JSONParser.parse(Array(text.utf8), maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true)
        for form in [prettyText(value), compactText(value), text] {
            #expect(Self.compacted(form) == (try Self.printed(form)), "\(form)")
        }
    }

    @Test func aStoredSettingsFileIsAnsweredAsPythonAnswersIt() throws {
        let file = """
            {
              "calibrationFactor": 1.01,
              "units": {
                "weight": "kg"
              },
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """
        // python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())))'
        #expect(Self.compacted(file) == #"{"calibrationFactor": 1.01, "units": {"weight": "kg"}, "serverReceivedAt": "20260518T044304.134233Z"}"#)
    }

    /// Valid JSON the printers would spell otherwise, or that the tree
    /// changes (a repeated key): the parser's business.
    @Test(arguments: [
        #"{"a": "\/"}"#, #"{"a": "\u0041"}"#, #"{"a": "\u00E9"}"#, #"{"a": "\u000a"}"#, #"{"a": "\u0022"}"#,
        "{\"a\": \"caf\u{e9}\"}", "{\"a\": \"\u{7f}\"}", #"{"a": 1, "a": 2}"#, #"{"a": {"b": 1, "b": 1}}"#,
        #"{"\u00e9": 1, "\u00e9": 2}"#, #"{"a": {"x": 1}, "a": 2}"#, #"[{"a": 1}, {"b": {"a": 1}, "b": 2}]"#,
    ])
    func otherSpellingsAndRepeatedKeysAreLeftToTheParser(_ text: String) throws {
        _ = try Self.printed(text)
        #expect(Self.compacted(text) == nil)
    }

    /// Every character through the printer's own escapes, one string per
    /// boundary of its table, is read back as printed.
    @Test func everyStringThePrinterWritesIsCompacted() throws {
        let scalars: [UInt32] = Array(0x00...0x21) + [0x22, 0x2F, 0x5C, 0x7E, 0x7F, 0x80, 0x9F, 0xA0, 0xFF, 0x100, 0x7FF, 0x800,
            0x2028, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF]
        for scalar in scalars {
            let text = String(Character(Unicode.Scalar(scalar)!))
            let value = JSONValue.object(JSONObject([JSONMember(text, .string("x" + text + "y"))]))
            let stored = JSONPrinter.pretty(value)
            #expect(JSONParser.compactForm(ofStored: stored) == JSONPrinter.compact(value), "U+\(String(scalar, radix: 16))")
        }
    }

    @Test func theSameKeyInAnotherObjectIsNotARepeat() throws {
        let text = #"{"a": {"a": 1, "b": {"a": 2}}, "b": [{"a": 3}, {"a": 4}]}"#
        #expect(Self.compacted(text) == (try Self.printed(text)))
    }

    @Test(arguments: [
        "", " ", "{", #"{"a": }"#, #"{"a" 1}"#, "[1,]", "[1 2]", "01", "1.", "-", "tru", "nul", #""\ud800""#,
        #""\udc00""#, #""\ud83d\u0041""#, #""unterminated"#, "{} {}", "\u{feff}{}", "\"a\u{1}b\"",
    ])
    func anythingElseIsLeftToTheParser(_ text: String) {
        #expect(Self.compacted(text) == nil)
    }

    @Test func sixtyFourLevelsAreCompactedAndDeeperIsLeftToTheParser() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(Self.compacted(deepest) == deepest)
        let deeper = "[" + deepest + "]"
        #expect(Self.compacted(deeper) == nil)
        #expect(try Self.printed(deeper) == deeper)
    }

    @Test func objectsOfUpToSixtyFourMembersAreCompacted() throws {
        func object(_ count: Int) -> String {
            "{" + (0..<count).map { #""k\#($0)": \#($0)"# }.joined(separator: ", ") + "}"
        }
        #expect(Self.compacted(object(64)) == object(64))
        #expect(Self.compacted(object(65)) == nil)
        #expect(try Self.printed(object(65)) == object(65))
    }
}

/// RFC 7396 merge patch, keeping member order.
@Suite struct JSONMergePatchTests {
    /// RFC 7396 Appendix A, every example; results printed compactly so order counts too.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a": "c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a": "b", "b": "c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b": "c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a": "c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a": ["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a": {"b": "d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a": [1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c", "d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e": null, "a": 1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a": "b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a": {"bb": {}}}"#),
    ])
    func rfc7396Examples(_ target: String, _ patch: String, _ expected: String) throws {
        #expect(compactText(try json(target).merging(patch: json(patch))) == expected)
    }

    @Test func replacedMembersKeepTheirPlaceAndNewOnesAreAppended() throws {
        let merged = try json(#"{"a": 1, "b": 2, "c": 3}"#).merging(patch: json(#"{"d": 4, "b": 20}"#))
        #expect(compactText(merged) == #"{"a": 1, "b": 20, "c": 3, "d": 4}"#)
    }

    @Test func nestedObjectsMergeInPlace() throws {
        let target = try json(#"{"units": {"weight": "kg", "height": "cm"}, "z": 0}"#)
        let merged = target.merging(patch: try json(#"{"units": {"weight": "lb", "height": null, "temp": "C"}}"#))
        #expect(compactText(merged) == #"{"units": {"weight": "lb", "temp": "C"}, "z": 0}"#)
    }

    @Test func numberTextSurvivesAMerge() throws {
        let merged = try json(#"{"f": 0.9990998620664758}"#).merging(patch: json(#"{"g": 1.50e3}"#))
        #expect(compactText(merged) == #"{"f": 0.9990998620664758, "g": 1.50e3}"#)
    }
}

/// `JSONObject` behaves like a Python dict: ordered, unique keys.
@Suite struct JSONObjectTests {
    @Test func settingAnExistingKeyReplacesInPlace() {
        var object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .number("2"))])
        object["a"] = .string("x")
        #expect(object.members == [JSONMember("a", .string("x")), JSONMember("b", .number("2"))])
    }

    @Test func settingANewKeyAppends() {
        var object = JSONObject([JSONMember("b", .number("2"))])
        object["a"] = .null
        #expect(object.members == [JSONMember("b", .number("2")), JSONMember("a", .null)])
    }

    @Test func settingNilRemovesAndMissingKeysStayMissing() {
        var object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .number("2"))])
        object["a"] = nil
        object["zz"] = nil
        #expect(object.members == [JSONMember("b", .number("2"))])
        #expect(object["a"] == nil)
        #expect(object.count == 1)
        #expect(!object.isEmpty)
    }

    @Test func buildingWithARepeatedKeyKeepsTheFirstPositionAndTheLastValue() {
        let object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .null), JSONMember("a", .number("3"))])
        #expect(object.members == [JSONMember("a", .number("3")), JSONMember("b", .null)])
        #expect(object.index(of: "b") == 1)
    }

    /// Keys compare as UTF-8 bytes, inline (up to 15 bytes) and heap strings alike.
    @Test func keysAreFoundByTheirExactBytes() {
        let long = "serverReceivedAtX"
        let object = JSONObject([
            JSONMember("", .number("0")), JSONMember(long, .number("1")), JSONMember("é", .number("2")),
            JSONMember(String(long.dropLast()) + "Y", .number("3")),
        ])
        #expect(object.index(of: "") == 0)
        #expect(object.index(of: long) == 1)
        #expect(object.index(of: String(long.dropLast()) + "Y") == 3)
        #expect(object.index(of: String(long.dropLast()) + "Z") == nil)
        #expect(object.index(of: "é") == 2)
        #expect(object.index(of: "e\u{301}") == nil)  // canonically equal, other bytes
        #expect(object.index(of: "\u{212A}") == nil)  // the Kelvin sign is not "K"
    }
}
