import MockCloudSystem

/// The user whose data a request reads or writes: `X-User-Key`,
/// `^[A-Za-z0-9_-]{1,128}$` (docs/API.md §2).
public struct UserKey: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// nil when `raw` does not have the shape the server accepts.
    public init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }
}

/// Who writes: `X-Device-Id`, kept as each message's `source` and used as
/// `exclude-source` to skip the device's own echoes (docs/API.md §4).
public struct DeviceID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// nil when `raw` does not have the user key's shape.
    public init?(_ raw: String) {
        guard Identifier.isValidUserKey(raw) else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }
}

/// A message's client-chosen id, `^[A-Za-z0-9._:-]{1,200}$`: the sync
/// identifier (HealthKit's `HKMetadataKeySyncIdentifier`).
public struct MessageID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// nil when `raw` does not have the shape the server accepts.
    public init?(_ raw: String) {
        guard Identifier.matches(raw, maxLength: 200, extra: "._:-") else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }

    public static func < (a: MessageID, b: MessageID) -> Bool { a.rawValue < b.rawValue }
}

/// A position in a key's change feed, opaque to clients: pass back exactly
/// what a page returned (docs/API.md §4, "Keeping an anchor").
public struct Anchor: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// nil for text no page could have returned (empty, over 100 bytes,
    /// or bytes outside the anchor's alphabet). The server judges the rest.
    public init?(_ raw: String) {
        guard !raw.isEmpty, raw.utf8.count <= 100,
            raw.utf8.allSatisfy({ ASCII.isDigit($0) || ASCII.hexValue($0) != nil || $0 == UInt8(ascii: ".") })
        else { return nil }
        rawValue = raw
    }

    public var description: String { rawValue }
}
