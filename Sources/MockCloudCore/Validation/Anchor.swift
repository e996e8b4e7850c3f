/// The opaque position a feed reader keeps between pages: `<generation>.<seq>`,
/// where the generation names one incarnation of a key's inbox, so that an
/// anchor from an inbox that was wiped and rebuilt is refused, not misread.
package struct Anchor: Sendable, Equatable, CustomStringConvertible {
    /// 16 hex digits, or `0` before anything was stored.
    package let generation: String
    /// Every change with a greater `seq` is after this anchor.
    package let seq: Int64

    /// The anchor of a reader that has seen nothing yet.
    package static let beginning = Anchor(generation: "0", seq: 0)

    package init(generation: String, seq: Int64) {
        self.generation = generation
        self.seq = seq
    }

    /// Parses an anchor as `description` prints it; `nil` when malformed.
    package init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 16,
            parts[0].utf8.allSatisfy({ Anchor.isHexDigit($0) }),
            !parts[1].isEmpty, parts[1].utf8.count <= 18,
            parts[1].utf8.allSatisfy(ASCII.isDigit),
            let seq = Int64(parts[1])
        else { return nil }
        self.init(generation: String(parts[0]), seq: seq)
    }

    package var description: String { "\(generation).\(seq)" }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
