import MockCloudJSON
import MockCloudSystem
import MockCloudTestSupport
import Testing

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
        // Longer than a small string (15 bytes), clean and with one byte to
        // escape at either end: the copy in one piece and the scalar loop.
        ("HKQuantityTypeIdentifierBodyMass 2026-05-18T04:43:04+00:00",
         #""HKQuantityTypeIdentifierBodyMass 2026-05-18T04:43:04+00:00""#),
        ("HKQuantityTypeIdentifierBodyMass\"", #""HKQuantityTypeIdentifierBodyMass\"""#),
        ("\u{7F}HKQuantityTypeIdentifierBodyMass", #""\u007fHKQuantityTypeIdentifierBodyMass""#),
        ("Body Mirror \u{1F}", #""Body Mirror \u001f""#),
        ("Körperwaage im Badezimmer", #""K\u00f6rperwaage im Badezimmer""#),
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
