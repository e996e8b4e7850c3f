import MockCloudSystem

/// `<data>/user_settings/<key>.json`: one file per user key, in the layout the
/// Python mock cloud writes, so that a data directory moves both ways.
package struct SettingsStore: Sendable {
    /// The data directory (`MOCKCLOUD_DATA`).
    package let root: String
    /// Every user's settings file, with its MAC sidecar when signing is on.
    let folder: DocumentFolder
    /// The route: the folder in the data directory, the lock and the MACs.
    static let route = Route.userSettings

    package init(root: String, integrity: Integrity = .off) {
        self.root = root
        folder = DocumentFolder(directory: Sys.path(root, "/", Self.route.name), integrity: integrity)
    }

    /// The folder that holds every user's settings file.
    package var directory: String { folder.directory }

    /// The file name of a key's settings.
    package func fileName(for key: UserKey) -> String { Sys.path(key.rawValue, ".json") }

    /// The path of a key's settings file, for messages.
    package func path(for key: UserKey) -> String { Sys.path(directory, "/", fileName(for: key)) }

    /// The stored bytes, verified, or `nil` when nothing is stored for `key`.
    package func read(_ key: UserKey) throws -> [UInt8]? {
        try folder.read(fileName(for: key), at: DocumentPlace(route: Self.route, key: key))
    }

    /// What an update decided to do with a key's file.
    package enum Change {
        case write([UInt8])
        case delete
    }

    /// Reads the current bytes and applies `decide`'s change, all under the
    /// key's lock, so that concurrent writers on one key are serialised.
    package func update<T>(_ key: UserKey, _ decide: ([UInt8]?) throws -> (Change, T)) throws -> T {
        try KeyLock.withLock(root: root, route: Self.route, key: key) {
            let current = try read(key)
            let (change, result) = try decide(current)
            switch change {
            case .write(let bytes):
                try folder.write(
                    bytes, to: fileName(for: key), at: DocumentPlace(route: Self.route, key: key), replacing: current)
            case .delete: _ = try folder.remove(fileName(for: key))
            }
            return result
        }
    }
}
