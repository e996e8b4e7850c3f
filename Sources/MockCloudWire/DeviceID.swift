/// A device's id (`X-Device-Id`), the writer a message names as its
/// `source` and the reader `exclude-source` names: the user key's shape.
public struct DeviceID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// nil when `raw` does not have the user key's shape.
    public init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }
}
