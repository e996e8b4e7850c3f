/// A message id that passed `^[A-Za-z0-9._:-]{1,200}$`: the sync identifier
/// (HealthKit's `HKMetadataKeySyncIdentifier`), safe as a file name once
/// `.json` is appended (no `/`, and never `.` or `..` after that).
public struct MessageID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest id accepted.
    public static let maxLength = 200
    public let rawValue: String

    /// nil when `raw` does not have the shape the server accepts.
    public init?(_ raw: String) {
        guard Identifier.matches(raw, maxLength: Self.maxLength, extra: "._:-") else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }

    public static func < (a: MessageID, b: MessageID) -> Bool { a.rawValue < b.rawValue }
}
