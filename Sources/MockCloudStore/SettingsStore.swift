import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// `<data>/user_settings/<key>.json`: one file per user key, in the layout the
/// Python mock cloud writes, so that a data directory moves both ways; and
/// the rules of a settings write: its conditions (`If-Match`,
/// `If-None-Match`), last writer wins on `updatedAt`, the server's
/// `serverReceivedAt`, and the stored size limit.
package struct SettingsStore: Sendable {
    /// The data directory (`MOCKCLOUD_DATA`).
    package let root: String
    /// Every user's settings file, with its MAC sidecar when signing is on.
    let folder: DocumentFolder
    /// The route: the folder in the data directory, the lock and the MACs.
    static let route = Route.userSettings

    /// Writes (not deletions) are refused below this much free space (`MOCKCLOUD_MIN_FREE_MB`).
    package let minimumFreeBytes: Int64
    /// The source of `serverReceivedAt`; tests pass a fixed one.
    let clock: @Sendable () -> Timestamp.Micros
    /// The largest stored file: the indented layout of a 1 MiB body nested 63
    /// levels deep would otherwise take 64 MiB of disk.
    package static let storedSizeLimit = 8 << 20

    package init(
        root: String, integrity: Integrity = .off, minimumFreeBytes: Int64 = FreeSpaceError.defaultFloor,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now
    ) {
        self.root = root
        self.minimumFreeBytes = minimumFreeBytes
        self.clock = clock
        folder = DocumentFolder(directory: Sys.path(root, "/", Self.route.name), integrity: integrity)
    }

    /// The folder that holds every user's settings file.
    package var directory: String { folder.directory }

    /// The file name of a key's settings.
    package func fileName(for key: UserKey) -> String { Sys.path(key.rawValue, ".json") }

    /// The path of a key's settings file, for messages.
    package func path(for key: UserKey) -> String { Sys.path(directory, "/", fileName(for: key)) }

    /// The stored bytes, verified, or `nil` when nothing is stored for `key`.
    /// A symbolic link in place of the folder or the file is refused.
    package func read(_ key: UserKey) throws -> [UInt8]? {
        do {
            try Sys.checkDirectory(directory)
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
        return try folder.read(fileName(for: key), at: DocumentPlace(route: Self.route, key: key), unlockedIn: root)
    }

    /// The stored bytes, verified, for a caller that holds the key's lock.
    private func readLocked(_ key: UserKey) throws -> [UInt8]? {
        try folder.read(fileName(for: key), at: DocumentPlace(route: Self.route, key: key))
    }

    /// True when a read finds nothing for `key`; false when it finds data or
    /// fails (the change under the lock then reads again and reports it).
    private func nothingStored(_ key: UserKey) -> Bool {
        do {
            return try read(key) == nil
        } catch {
            return false
        }
    }

    // MARK: - The rules of a write

    /// Stores `document` in place of what is stored (PUT), on `conditions`;
    /// the stored document, stamped, is returned.
    @discardableResult
    package func replace(_ key: UserKey, with document: JSONObject, given conditions: Preconditions) throws -> StoredSettings {
        try write(key, given: conditions) { _ in document }
    }

    /// Merges `patch` (RFC 7396) into the stored document (PATCH), on `conditions`.
    @discardableResult
    package func merge(_ key: UserKey, patch: JSONObject, given conditions: Preconditions) throws -> StoredSettings {
        try write(key, given: conditions) { current in
            guard let current else { throw SettingsError.nothingStored }
            guard let stored = current.document else { throw SettingsError.storedDocumentUnreadable(file: path(for: key)) }
            guard let document = stored.objectValue else {
                throw SettingsError.storedDocumentNotAnObject(file: path(for: key))
            }
            return JSONValue.object(document).merging(patch: .object(patch)).objectValue ?? JSONObject()
        }
    }

    /// Removes the key's settings (DELETE), on `conditions`.
    package func remove(_ key: UserKey, given conditions: Preconditions) throws {
        try update(key) { bytes in
            let current = bytes.map(StoredSettings.init(bytes:))
            try check(conditions, current)
            guard current != nil else { throw SettingsError.nothingStored }
            return (.delete, ())
        }
    }

    /// PUT and PATCH, under the key's lock: conditions, last writer wins on
    /// `updatedAt` (an older one is refused with what is stored), the
    /// server's `serverReceivedAt`, the size limit, then the atomic write.
    private func write(
        _ key: UserKey, given conditions: Preconditions, makeDocument: (StoredSettings?) throws -> JSONObject
    ) throws -> StoredSettings {
        try update(key) { bytes in
            let current = bytes.map(StoredSettings.init(bytes:))
            try check(conditions, current)
            var document = try makeDocument(current)
            if let current, let stored = current.updatedAt,
                let incoming = StoredSettings.updatedAt(of: .object(document)), incoming.instant < stored.instant
            {
                throw SettingsError.olderThanStored(incoming: incoming.text, stored: stored.text, current: current)
            }
            document["serverReceivedAt"] = .string(Timestamp.format(clock()))
            let value = JSONValue.object(document)
            let newBytes = JSONPrinter.pretty(value)
            if newBytes.count > Self.storedSizeLimit {
                throw SettingsError.storedFormTooLarge(size: newBytes.count, limit: Self.storedSizeLimit)
            }
            return (.write(newBytes), StoredSettings(bytes: newBytes, document: value))
        }
    }

    private func check(_ conditions: Preconditions, _ current: StoredSettings?) throws {
        if let failure = conditions.failure(current: current?.etag) {
            throw SettingsError.preconditionFailed(failure, current: current)
        }
    }

    // MARK: - The file

    /// What an update decided to do with a key's file.
    enum Change {
        case write([UInt8])
        case delete
    }

    /// Reads the current bytes and applies `decide`'s change, all under the
    /// key's lock, so that concurrent writers on one key are serialised.
    /// A key that holds nothing has no lock file: when `decide` writes nothing
    /// there either (a DELETE or a refused PATCH), it answers without creating
    /// one; otherwise it decides again under the new lock. The lock file goes
    /// with the key's settings file. `decide` may run twice: it must only decide.
    private func update<T>(_ key: UserKey, _ decide: ([UInt8]?) throws -> (Change, T)) throws -> T {
        if !KeyLock.exists(root: root, route: Self.route, key: key), nothingStored(key) {
            let (change, result) = try decide(nil)
            if case .delete = change { return result }
        }
        let file = path(for: key)
        return try KeyLock.withLock(
            root: root, route: Self.route, key: key, holdsData: { Sys.exists(file) }, tidy: { _ in removeTemporaries(key) }
        ) {
            let current = try readLocked(key)
            let (change, result) = try decide(current)
            switch change {
            case .write(let bytes):
                // Below the floor only deletions run: they are how space is freed.
                try FreeSpaceError.check(root, floor: minimumFreeBytes)
                try folder.write(
                    bytes, to: fileName(for: key), at: DocumentPlace(route: Self.route, key: key), replacing: current)
            case .delete: _ = try folder.remove(fileName(for: key))
            }
            return result
        }
    }

    /// Removes the temporary files killed writers left in the folder every
    /// key shares, with `key`'s lock held: `key`'s own, and another key's
    /// only while this process holds that key's lock too (taken without
    /// waiting), so that a live writer's file is never removed.
    private func removeTemporaries(_ key: UserKey) {
        let own = fileName(for: key)
        for name in AtomicFile.documentsWithTemporaries(in: directory) {
            if name == own || name == Sys.path(own, DocumentFolder.sidecarSuffix) {
                AtomicFile.removeTemporary(of: name, in: directory)
                continue
            }
            let document = name.hasSuffix(DocumentFolder.sidecarSuffix)
                ? name.dropLast(DocumentFolder.sidecarSuffix.count) : Substring(name)
            guard document.hasSuffix(".json"), let other = UserKey(String(document.dropLast(5))) else { continue }
            let file = path(for: other)
            _ = try? KeyLock.whileFree(root: root, route: Self.route, key: other, holdsData: { Sys.exists(file) }) {
                AtomicFile.removeTemporary(of: name, in: directory)
            }
        }
    }
}
