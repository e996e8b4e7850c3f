import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// `<data>/user_settings/<key>.json`: one file per user key, in the layout the
/// Python mock cloud writes, so that a data directory moves both ways; and
/// the rules of a settings write: its conditions (`If-Match`,
/// `If-None-Match`), last writer wins on `updatedAt`, the server's
/// `serverReceivedAt`, and the stored size limit. Beside a document that a
/// per-field merge wrote, `<key>.json.times` keeps its member times
/// (`MemberTimesFile`), which the Python service never reads.
package struct SettingsStore: Sendable {
    /// The data directory (`MOCKCLOUD_DATA`).
    package let root: String
    /// Every user's settings file, with its MAC sidecar when signing is on.
    let folder: DocumentFolder
    /// Its name: the folder in the data directory, the lock and the MACs.
    static let storeName = StoreName.userSettings

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
        folder = DocumentFolder(directory: DataDirectory(root).folder(Self.storeName), integrity: integrity)
    }

    /// The folder that holds every user's settings file.
    package var directory: String { folder.directory }

    /// The file name of a key's settings.
    package func fileName(for key: UserKey) -> String { Sys.path(key.rawValue, ".json") }

    /// The path of a key's settings file, for messages.
    package func path(for key: UserKey) -> String { Sys.path(directory, "/", fileName(for: key)) }

    /// What follows a settings file's name in its member times' name.
    package static let timesSuffix = ".times"

    /// The largest member-times file: the times of two documents (the one
    /// in place and the one it replaced) of many small members.
    package static let timesSizeLimit = 16 << 20

    /// The file name of a key's member times: `<key>.json.times`.
    package func timesFileName(for key: UserKey) -> String { Sys.path(fileName(for: key), Self.timesSuffix) }

    /// Where a key's member times belong, for their MAC.
    package static func timesPlace(_ key: UserKey) -> DocumentPlace {
        DocumentPlace(store: storeName, key: key, content: .memberTimes)
    }

    /// The stored bytes, verified, or `nil` when nothing is stored for `key`.
    /// A symbolic link in place of the folder or the file is refused.
    package func read(_ key: UserKey) throws -> [UInt8]? {
        do {
            try Sys.checkDirectory(directory)
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
        return try folder.read(fileName(for: key), at: DocumentPlace(store: Self.storeName, key: key), unlockedIn: root)
    }

    /// The stored bytes (as `read`) once `isNews` says they are worth an
    /// answer, or when `wait` ends: read again after each change of the
    /// key's settings file (renamed into place or removed), holding no lock
    /// while it waits. `current` is what the caller read last.
    package func read(_ key: UserKey, after current: [UInt8]?, waiting wait: WaitLimit,
                      until isNews: ([UInt8]?) -> Bool) throws -> [UInt8]? {
        var bytes = current
        try wait.waitForChange(of: path(for: key), under: root) {
            bytes = try read(key)
            return isNews(bytes)
        }
        return bytes
    }

    /// The stored bytes, verified, for a caller that holds the key's lock.
    private func readLocked(_ key: UserKey) throws -> [UInt8]? {
        try folder.read(fileName(for: key), at: DocumentPlace(store: Self.storeName, key: key))
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

    /// Merges a per-field patch (PATCH with `X-Merge: fields`), on
    /// `conditions`: each member of the patch is applied when its edit is
    /// newer than the stored member's (`FieldPatch.apply`); no `updatedAt`
    /// rule refuses the whole. Nothing is written when no member changed.
    /// The document and its member times are replaced together.
    package func mergeFields(_ key: UserKey, _ patch: FieldPatch, given conditions: Preconditions) throws -> FieldMerge {
        try update(key) { bytes in
            let current = bytes.map(StoredSettings.init(bytes:))
            try check(conditions, current)
            var stored: JSONObject?
            var read: (settings: TimedSettings, fileBytes: [UInt8]?)?
            if let current {
                guard let document = current.document else { throw SettingsError.storedDocumentUnreadable(file: path(for: key)) }
                guard let object = document.objectValue else {
                    throw SettingsError.storedDocumentNotAnObject(file: path(for: key))
                }
                stored = object
                // A times file that cannot be read now fails the write (retry is
                // safe), rather than decide with times that may be older.
                read = try timed(current, key)
            }
            let outcome = patch.apply(to: stored, times: read?.settings.times ?? MemberTimes())
            let problem = read?.settings.problem
            if let current, !outcome.changed {
                return (.keep, FieldMerge(stored: current, kept: outcome.kept, problem: problem))
            }
            var document = outcome.document
            document["serverReceivedAt"] = .string(Timestamp.format(clock()))
            let value = JSONValue.object(document)
            let newBytes = JSONPrinter.pretty(value)
            if newBytes.count > Self.storedSizeLimit {
                throw SettingsError.storedFormTooLarge(size: newBytes.count, limit: Self.storedSizeLimit)
            }
            let written = StoredSettings(bytes: newBytes, document: value)
            // The times of the document in place stay beside the new ones until the
            // new document is in place too: a reader of either finds its own.
            var entries = [(tag: written.etag, times: outcome.times)]
            if let current, let read, current.etag != written.etag {
                entries.append((current.etag, read.settings.times))
            }
            let times = MemberTimesFile(documents: entries).bytes
            if times.count > Self.timesSizeLimit {
                throw SettingsError.memberTimesTooLarge(size: times.count, limit: Self.timesSizeLimit)
            }
            return (.writeWithTimes(newBytes, times: times, replacingTimes: read?.fileBytes),
                    FieldMerge(stored: written, kept: outcome.kept, problem: problem))
        }
    }

    /// The stored settings with the time of each member, verified; `nil`
    /// when nothing is stored. A times file that is missing leaves
    /// whole-document times (`MemberTimes.wholeDocument`); one that is
    /// damaged, fails its check or holds no times for this document does
    /// too, and `problem` says so for the log. Never a failure of the read.
    package func readWithTimes(_ key: UserKey) throws -> TimedSettings? {
        guard let bytes = try read(key) else { return nil }
        let first = timedForReaders(StoredSettings(bytes: bytes), key)
        guard first.problem != nil else { return first }
        // A writer may have replaced the pair between the two files' reads:
        // read both again where no writer is at work, before it counts.
        let again = { try readLocked(key).map { timedForReaders(StoredSettings(bytes: $0), key) } }
        return try KeyLock.withExistingLock(root: root, store: Self.storeName, key: key, shared: true, again, ifMissing: again)
    }

    /// `timed`, where a times file that cannot be read is one more problem.
    private func timedForReaders(_ current: StoredSettings, _ key: UserKey) -> TimedSettings {
        do {
            return try timed(current, key).settings
        } catch {
            return TimedSettings(current, MemberTimes.wholeDocument(current.document), problem: Self.degraded(
                Sys.path(directory, "/", timesFileName(for: key)), "could not be read (\(error))"))
        }
    }

    /// The log line of a times file that was not used.
    private static func degraded(_ file: String, _ what: String) -> String {
        file + " " + what
            + "; every member of the stored settings takes their updatedAt as its edit time until the next per-field write"
    }

    /// `current`'s member times from the times file, or whole-document
    /// times and the problem with the file; with the file's bytes when they
    /// verified (a per-field write keeps them valid until it is in place).
    /// Throws `StorageError` when the file cannot be read.
    private func timed(_ current: StoredSettings, _ key: UserKey) throws -> (settings: TimedSettings, fileBytes: [UInt8]?) {
        let whole = MemberTimes.wholeDocument(current.document)
        guard let document = current.document?.objectValue else { return (TimedSettings(current, whole), nil) }
        let name = timesFileName(for: key)
        func degraded(_ what: String, _ bytes: [UInt8]? = nil) -> (settings: TimedSettings, fileBytes: [UInt8]?) {
            (TimedSettings(current, whole, problem: Self.degraded(Sys.path(directory, "/", name), what)), bytes)
        }
        guard let (bytes, verdict) = try folder.inspect(name, at: Self.timesPlace(key)) else {
            return (TimedSettings(current, whole), nil)
        }
        switch verdict {
        case .invalid(let reason): return degraded("failed its integrity check (\(reason))")
        case .unsigned where folder.integrity.requireSigned: return degraded("is unsigned, and MOCKCLOUD_HMAC_REQUIRE=1")
        case .signed, .unsigned: break
        }
        let file: MemberTimesFile
        do {
            file = try MemberTimesFile(bytes: bytes)
        } catch {
            return degraded("is damaged: \(error)", bytes)
        }
        guard let times = file.times(for: current.etag) else {
            return degraded("holds no member times for the stored document (another program wrote it, or a"
                + " plain write's removal of the times was lost)", bytes)
        }
        if let mismatch = times.mismatch(with: document) {
            return degraded("does not fit the stored document: \(mismatch)", bytes)
        }
        return (TimedSettings(current, times), bytes)
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
        /// A plain write: whole-document times, so the member times go.
        case write([UInt8])
        /// A per-field write: the document and its member times, together.
        case writeWithTimes([UInt8], times: [UInt8], replacingTimes: [UInt8]?)
        case delete
        /// Nothing to write.
        case keep
    }

    /// Reads the current bytes and applies `decide`'s change, all under the
    /// key's lock, so that concurrent writers on one key are serialised.
    /// A key that holds nothing has no lock file: when `decide` writes nothing
    /// there either (a DELETE or a refused PATCH), it answers without creating
    /// one; otherwise it decides again under the new lock. The lock file goes
    /// with the key's settings file. `decide` may run twice: it must only decide.
    private func update<T>(_ key: UserKey, _ decide: ([UInt8]?) throws -> (Change, T)) throws -> T {
        if !KeyLock.exists(root: root, store: Self.storeName, key: key), nothingStored(key) {
            let (change, result) = try decide(nil)
            switch change {
            case .delete, .keep: return result
            case .write, .writeWithTimes: break
            }
        }
        let file = path(for: key)
        return try KeyLock.withLock(
            root: root, store: Self.storeName, key: key, holdsData: { Sys.exists(file) }, tidy: { _ in removeTemporaries(key) }
        ) {
            let current = try readLocked(key)
            let (change, result) = try decide(current)
            let place = DocumentPlace(store: Self.storeName, key: key)
            switch change {
            case .write(let bytes):
                // Below the floor only deletions run: they are how space is freed.
                try FreeSpaceError.check(root, floor: minimumFreeBytes)
                try folder.write(bytes, to: fileName(for: key), at: place, replacing: current)
                removeTimes(of: file)
            case .writeWithTimes(let bytes, let times, let previousTimes):
                try FreeSpaceError.check(root, floor: minimumFreeBytes)
                // The times first, as no reader sees them change: they still hold
                // the times of the document in place. The document's rename is
                // the change, so a failure before it changed nothing.
                try folder.write([
                    DocumentWrite(name: timesFileName(for: key), bytes: times, place: Self.timesPlace(key),
                                  previous: previousTimes, visible: false),
                    DocumentWrite(name: fileName(for: key), bytes: bytes, place: place, previous: current),
                ])
            case .delete:
                _ = try folder.remove(fileName(for: key))
                removeTimes(of: file)
            case .keep: break
            }
            return result
        }
    }

    /// Removes the member times of a document that a plain write replaced
    /// or a deletion removed, once that change is made; best effort. A
    /// times file left behind (this failed, or a crash came first) names no
    /// document in place: readers take whole-document times, which is what
    /// a plain write means, and log it.
    /// `file` is the settings file's path: every plain write pays for this
    /// unlink, so its path is made from that one in a single step.
    private func removeTimes(of file: String) {
        let times = Sys.path(file, Self.timesSuffix)
        guard (try? Sys.unlink(times)) == true else { return }
        _ = try? Sys.unlink(Sys.path(times, DocumentFolder.sidecarSuffix))
    }

    /// Removes the temporary files killed writers left in the folder every
    /// key shares, with `key`'s lock held: `key`'s own, and another key's
    /// only while this process holds that key's lock too (taken without
    /// waiting), so that a live writer's file is never removed.
    private func removeTemporaries(_ key: UserKey) {
        for name in AtomicFile.documentsWithTemporaries(in: directory) {
            var document = Substring(name)
            if document.hasSuffix(DocumentFolder.sidecarSuffix) { document = document.dropLast(DocumentFolder.sidecarSuffix.count) }
            if document.hasSuffix(Self.timesSuffix) { document = document.dropLast(Self.timesSuffix.count) }
            guard document.hasSuffix(".json"), let other = UserKey(String(document.dropLast(5))) else { continue }
            if other == key {
                AtomicFile.removeTemporary(of: name, in: directory)
                continue
            }
            let file = path(for: other)
            _ = try? KeyLock.whileFree(root: root, store: Self.storeName, key: other, holdsData: { Sys.exists(file) }) {
                AtomicFile.removeTemporary(of: name, in: directory)
            }
        }
    }
}
