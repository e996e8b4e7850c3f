import MockCloudJSON
import MockCloudSystem
import Testing

@Suite struct ByteFormattingTests {
    @Test(arguments: ["", "plain", "café", "😀 and \u{FFFD}", "\u{0}\u{7F}\u{80}\u{10FFFF}"])
    func validUTF8IsDecoded(_ text: String) {
        #expect(ASCII.validUTF8(Array(text.utf8)).map { Array($0.utf8) } == Array(text.utf8))
    }

    @Test(arguments: [
        [0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x61, 0xC3], [0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xEF, 0xBF, 0xBD, 0xFE],
    ] as [[UInt8]])
    func invalidUTF8IsRefused(_ bytes: [UInt8]) {
        #expect(ASCII.validUTF8(bytes) == nil)
    }

    @Test(arguments: [(7, 3, "007"), (12345, 3, "12345"), (0, 20, "00000000000000000000"), (-5, 4, "00-5")])
    func zeroPaddedNumbersKeepTheirOldForm(value: Int64, width: Int, expected: String) {
        #expect(ASCII.zeroPadded(value, width: width) == expected)
    }

    @Test(arguments: [0, 7, 10, 99, 100, 413, -1, -507, Int.max, Int.min])
    func decimalDigitsAreThoseOfTheStandardLibrary(value: Int) {
        var out: [UInt8] = Array("x".utf8)
        ASCII.appendDecimal(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x\(value)")
    }

    @Test func hexIsLowercaseTwoDigitsPerByte() {
        #expect(ASCII.hex([]) == "")
        #expect(ASCII.hex([0x00, 0x0f, 0xa0, 0xff, 0x5c]) == "000fa0ff5c")
    }

    /// The ETag is FNV-1a 64 as 16 zero-padded hex digits in quotes; some of
    /// these inputs hash to values with leading zero digits.
}
