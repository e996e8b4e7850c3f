import MockCloudSystem
import Testing

/// The index-range line and field walkers the key, token and sidecar parsers share.
@Suite struct ByteLinesTests {
    private func lines(_ text: String) -> [(Int, String)] {
        let bytes = Array(text.utf8)
        var lines = ByteLines(bytes)
        var out: [(Int, String)] = []
        while let line = lines.next() { out.append((lines.number, String(decoding: bytes[line], as: UTF8.self))) }
        return out
    }

    @Test func linesAreNumberedAndAFinalNewlineEndsTheLastOne() {
        #expect(lines("").isEmpty)
        #expect(lines("\n").map(\.1) == [""])
        #expect(lines("a\n\nb").map(\.0) == [1, 2, 3])
        #expect(lines("a\n\nb").map(\.1) == ["a", "", "b"])
        #expect(lines("a\nb\n").map(\.1) == ["a", "b"])
        let bytes = Array("\n\nx\n".utf8)
        var nonEmpty = ByteLines(bytes)
        #expect(nonEmpty.nextNonEmpty() == 2..<3)
        #expect(nonEmpty.number == 3)
        #expect(nonEmpty.nextNonEmpty() == nil)
    }

    @Test func fieldsSkipRepeatedAndOuterSeparators() {
        let bytes = Array("  a  bc d ".utf8)
        var fields = ByteFields(bytes, 0..<bytes.count, separator: 0x20)
        var out: [String] = []
        while let field = fields.next() { out.append(String(decoding: bytes[field], as: UTF8.self)) }
        #expect(out == ["a", "bc", "d"])
        var none = ByteFields(bytes, 0..<2, separator: 0x20)
        #expect(none.next() == nil)
        var part = ByteFields(bytes, 5..<7, separator: 0x20)
        #expect(part.next() == 5..<7)
    }
}
