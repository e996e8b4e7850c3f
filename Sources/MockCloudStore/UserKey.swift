import MockCloudSystem

/// A user key that passed `^[A-Za-z0-9_-]{1,128}$`: safe as a file name.
package struct UserKey: Sendable, Hashable, CustomStringConvertible {
    package let rawValue: String

    package init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }

    package var description: String { rawValue }
}
