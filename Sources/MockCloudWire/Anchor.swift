import MockCloudJSON

/// The opaque position a feed reader keeps between pages:
/// `<generation>.<epoch>.<seq>`. The generation names one incarnation of a
/// key's inbox, so that an anchor from an inbox that was wiped and rebuilt is
/// refused, not misread; the epoch counts the compactions that dropped
/// tombstones, so that an anchor issued before one can be told from an anchor
/// issued after it (which has seen every deletion still kept). Clients keep
/// it as text and pass it back unchanged (docs/API.md §4, "Keeping an anchor").
public struct Anchor: Sendable, Hashable, CustomStringConvertible {
    /// 16 hex digits, or `0` before anything was stored.
    package let generation: String
    /// Compactions that dropped tombstones before this anchor was issued.
    package let epoch: Int64
    /// Every change with a greater `seq` is after this anchor.
    package let seq: Int64

    /// The anchor of a reader that has seen nothing yet.
    public static let beginning = Anchor(generation: "0", epoch: 0, seq: 0)

    package init(generation: String, epoch: Int64, seq: Int64) {
        self.generation = generation
        self.epoch = epoch
        self.seq = seq
    }

    /// Parses an anchor as `description` prints it; `nil` when malformed
    /// (the server answers 400 for such text).
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.count <= 16,
            parts[0].utf8.allSatisfy(Anchor.isHexDigit),
            let epoch = Anchor.number(parts[1]), let seq = Anchor.number(parts[2])
        else { return nil }
        self.init(generation: String(parts[0]), epoch: epoch, seq: seq)
    }

    public var description: String { "\(generation).\(epoch).\(seq)" }

    /// The text a page returned, to store and send back.
    public var rawValue: String { description }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy(ASCII.isDigit) else { return nil }
        return Int64(text)
    }

    package static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
