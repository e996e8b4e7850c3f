import MockCloudJSON
import MockCloudSystem
import MockCloudTestSupport
import Testing

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
