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
