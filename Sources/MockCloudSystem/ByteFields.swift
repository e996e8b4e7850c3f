/// The fields of part of a byte buffer, split at a separator byte; empty
/// fields (separators in a row, at the start or at the end) are skipped.
package struct ByteFields {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int
    private let separator: UInt8

    package init(_ bytes: [UInt8], _ range: Range<Int>, separator: UInt8) {
        self.bytes = bytes
        position = range.lowerBound
        end = range.upperBound
        self.separator = separator
    }

    /// The next field; nil after the last.
    package mutating func next() -> Range<Int>? {
        while position < end && bytes[position] == separator { position += 1 }
        guard position < end else { return nil }
        let start = position
        while position < end && bytes[position] != separator { position += 1 }
        return start..<position
    }
}
