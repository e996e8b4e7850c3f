import MockCloudSystem

/// A device id from `X-Device-Id` or `exclude-source`: the user-key shape.
package struct DeviceID: Sendable, Hashable {
    package let rawValue: String

    package init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }
}
