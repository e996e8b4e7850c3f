/// `<data>/user_settings/<key>.json`: one file per user key, in the layout the
/// Python mock cloud writes, so that a data directory moves both ways.
package struct SettingsStore: Sendable {
    /// The data directory (`MOCKCLOUD_DATA`).
    package let root: String

    package init(root: String) {
        self.root = root
    }

    /// The folder that holds every user's settings file.
    package var directory: String { root + "/user_settings" }

    /// The file name of a key's settings.
    package func fileName(for key: UserKey) -> String { key.rawValue + ".json" }

    /// The stored bytes, or `nil` when nothing is stored for `key`.
    package func read(_ key: UserKey) throws -> [UInt8]? {
        try AtomicFile.read(fileName(for: key), in: directory)
    }

    /// What an update decided to do with a key's file.
    package enum Change {
        case write([UInt8])
        case delete
    }

    /// Reads the current bytes and applies `decide`'s change, all under the
    /// key's lock, so that concurrent writers on one key are serialised.
    package func update<T>(_ key: UserKey, _ decide: ([UInt8]?) throws -> (Change, T)) throws -> T {
        try KeyLock.withLock(root: root, scope: "user_settings", key: key) {
            let (change, result) = try decide(read(key))
            switch change {
            case .write(let bytes): try AtomicFile.write(bytes, to: fileName(for: key), in: directory)
            case .delete: _ = try AtomicFile.remove(fileName(for: key), in: directory)
            }
            return result
        }
    }
}
