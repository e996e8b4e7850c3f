/// The lines of a byte buffer as index ranges, split at LF; no copies. Text
/// that ends in LF has no empty line after it.
package struct ByteLines {
    private let bytes: [UInt8]
    private var start = 0
    /// The 1-based number of the line `next()` returned last.
    package private(set) var number = 0

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next line without its LF; nil after the last.
    package mutating func next() -> Range<Int>? {
        guard start < bytes.count else { return nil }
        let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
        defer { start = end + 1 }
        number += 1
        return start..<end
    }

    /// The next line that is not empty.
    package mutating func nextNonEmpty() -> Range<Int>? {
        while let line = next() {
            if !line.isEmpty { return line }
        }
        return nil
    }
}

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
