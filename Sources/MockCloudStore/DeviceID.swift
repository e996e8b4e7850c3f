import MockCloudSystem

/// A device's id, the writer a message names as its `source`: the user-key shape.
package struct DeviceID: Sendable, Hashable {
    package let rawValue: String

    package init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }
}
