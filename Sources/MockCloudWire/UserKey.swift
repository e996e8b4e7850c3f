/// A user key that passed `^[A-Za-z0-9_-]{1,128}$` (`X-User-Key`,
/// docs/API.md §2): safe as a file name.
public struct UserKey: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// nil when `raw` does not have the shape the server accepts.
    public init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }
}
