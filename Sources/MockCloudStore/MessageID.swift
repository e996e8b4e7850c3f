import MockCloudSystem

/// A message id that passed `^[A-Za-z0-9._:-]{1,200}$`: safe as a file name
/// once `.json` is appended (no `/`, and never `.` or `..` after that).
package struct MessageID: Sendable, Hashable, CustomStringConvertible {
    /// The longest id accepted.
    package static let maxLength = 200
    package let rawValue: String

    package init?(_ raw: String) {
        guard Identifier.matches(raw, maxLength: Self.maxLength, extra: "._:-") else { return nil }
        rawValue = raw
    }

    package var description: String { rawValue }
}
