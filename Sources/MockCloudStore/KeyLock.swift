import MockCloudSystem
import MockCloudWire

/// Per-key locks (`flock`) on files under `<data>/.locks/`: writers on one key
/// are serialised, readers of a key's feed share the lock so that they never
/// see a write half done, and different keys never wait for each other.
///
/// A lock file exists only while its key holds data: a writer creates it
/// before the key's first file, and removes it, still holding the lock,
/// once the key holds nothing (`holdsData`). A request that finds nothing
/// creates nothing (`withExistingLock`), so that requests on keys that hold
/// nothing cannot fill the disk's inodes. A waiter whose file was removed
/// while it waited holds a lock nobody else will take: after `flock` it
/// checks that its file is still the one at the path, and starts again
/// otherwise. Lock files are opened with `O_NOFOLLOW`: a planted link is
/// refused, never followed.
package enum KeyLock {
    /// `<root>/.locks/<store>.<key>.lock`.
    package static func path(root: String, store: StoreName, key: UserKey) -> String {
        DataDirectory(root).lockFile(store, key)
    }

    /// True when the key's lock file exists: the key holds data, or a writer
    /// is about to store some.
    package static func exists(root: String, store: StoreName, key: UserKey) -> Bool {
        Sys.exists(path(root: root, store: store, key: key))
    }

    /// Seconds between two tidy-ups of a key's folders (`tidy` below). Only
    /// how often: what a tidy-up removes is decided by locks, not by clocks.
    package static let tidyIntervalSeconds = 30

    /// Runs `body` while holding the lock of `store` and `key`, creating the
    /// lock file when it is missing. Exclusive holders: the lock file is
    /// removed after `body` (returned or thrown) when `holdsData` then says
    /// the key holds nothing; when the lock file was new or untouched for
    /// `tidyIntervalSeconds`, `tidy` runs first (it removes what killed
    /// writers left; it learns whether the lock file was new) and the lock
    /// file is touched.
    package static func withLock<T>(
        root: String, store: StoreName, key: UserKey, shared: Bool = false,
        holdsData: () -> Bool = { true }, tidy: (_ lockWasNew: Bool) -> Void = { _ in }, _ body: () throws -> T
    ) throws -> T {
        while true {
            do {
                return try attempt(
                    root: root, store: store, key: key, shared: shared, create: true,
                    holdsData: holdsData, tidy: tidy, body)
            } catch is Retry {
                continue
            }
        }
    }

    /// Runs `body` under the key's exclusive lock when its lock file exists
    /// and no other process holds it, without waiting; false when it did not
    /// run. `body` learns whether a tidy-up is due (see `withLock`); the lock
    /// file is then touched. For work that may be skipped: the next writer
    /// does it.
    @discardableResult
    package static func ifFree(root: String, store: StoreName, key: UserKey, _ body: (_ tidyDue: Bool) throws -> Void) throws -> Bool {
        var tidyDue = false
        return try withoutWaiting(root: root, store: store, key: key, create: false, holdsData: { true },
                                  tidy: { _ in tidyDue = true }) { try body(tidyDue) }
    }

    /// Runs `body` with the key's exclusive lock when nobody holds it, taken
    /// without waiting (the lock file is made when missing, and removed again
    /// when `holdsData` then says the key holds nothing): no writer of that
    /// key is at work meanwhile. False when it did not run.
    @discardableResult
    package static func whileFree(
        root: String, store: StoreName, key: UserKey, holdsData: () -> Bool, _ body: () throws -> Void
    ) throws -> Bool {
        try withoutWaiting(root: root, store: store, key: key, create: true, holdsData: holdsData, tidy: { _ in }, body)
    }

    /// Runs `body` holding the `flock` of `folder` itself, taken without
    /// waiting; false when another process holds it or there is no such
    /// folder. No reader or writer takes it: it keeps one long task at a time
    /// per folder (an inbox's upkeep) while the key's own lock stays free.
    @discardableResult
    package static func ifFolderFree(_ folder: String, _ body: () throws -> Void) throws -> Bool {
        let fd: FileDescriptor
        do {
            fd = try Sys.open(folder, .directory | .noFollow)
        } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
            return false
        } catch let error as SystemError {
            throw StorageError(error, .writing)
        }
        return try Sys.closing(fd) { fd in
            do {
                guard try Sys.tryLock(fd, path: folder) else { return false }
            } catch let error as SystemError {
                throw StorageError(error, .writing)
            }
            try body()
            return true
        }
    }

    /// `attempt` with the exclusive lock taken without waiting: false when
    /// another process holds it, when its file went meanwhile, or (not
    /// `create`) when there is none.
    private static func withoutWaiting(
        root: String, store: StoreName, key: UserKey, create: Bool, holdsData: () -> Bool, tidy: (Bool) -> Void,
        _ body: () throws -> Void
    ) throws -> Bool {
        do {
            try attempt(
                root: root, store: store, key: key, shared: false, create: create, wait: false,
                holdsData: holdsData, tidy: tidy, body)
            return true
        } catch is Retry {
            return false
        } catch is Busy {
            return false
        } catch is Missing {
            return false
        }
    }

    /// Runs `body` under the lock when the key's lock file exists, and
    /// `ifMissing` (without a lock, creating nothing) when it does not: the
    /// key holds no data.
    package static func withExistingLock<T>(
        root: String, store: StoreName, key: UserKey, shared: Bool = false,
        _ body: () throws -> T, ifMissing: () throws -> T
    ) throws -> T {
        while true {
            do {
                return try attempt(
                    root: root, store: store, key: key, shared: shared, create: false,
                    holdsData: { true }, tidy: { _ in }, body)
            } catch is Retry {
                continue
            } catch is Missing {
                return try ifMissing()
            }
        }
    }

    /// The lock file went while this process waited for it, or another
    /// writer created it first: open it again. (Thrown, not an optional
    /// result: an optional of a generic result costs a CGI process the
    /// run-time metadata of Optional.)
    private struct Retry: Error {}
    /// No lock file, and none was to be created.
    private struct Missing: Error {}
    /// Another process holds the lock, and this one was not to wait.
    private struct Busy: Error {}

    private static func attempt<T>(
        root: String, store: StoreName, key: UserKey, shared: Bool, create: Bool, wait: Bool = true,
        holdsData: () -> Bool, tidy: (Bool) -> Void, _ body: () throws -> T
    ) throws -> T {
        let path = self.path(root: root, store: store, key: key)
        // Readers lock a read-only descriptor: a read-only data directory
        // still has its lock files to share.
        let access: OpenOptions = shared ? .readOnly : .readWrite
        let fd: FileDescriptor
        var created = false
        do {
            do {
                fd = try Sys.open(path, access | .noFollow)
            } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
                guard create else { throw Missing() }
                // Never create a lock file through a planted `.locks` link.
                try DataDirectory(root).makeLocks()
                do {
                    fd = try Sys.open(path, .readWrite | .create | .exclusive | .noFollow, mode: 0o600)
                    created = true
                } catch let error as SystemError where error.errno == .exists {
                    throw Retry()  // another writer made it first: take theirs
                }
            }
        } catch let error as SystemError where shared && error.isNotWritable {
            // A read-only data directory has no writers to wait for.
            return try body()
        } catch let error as SystemError {
            throw StorageError(error, shared ? .reading : .writing)
        }
        return try Sys.closing(fd) { fd in
            do {
                if wait {
                    try Sys.lock(fd, shared: shared, path: path)
                } else if !(try Sys.tryLock(fd, path: path)) {
                    throw Busy()
                }
                // Removed (its key's data gone) while this process waited.
                guard try Sys.isStill(fd, at: path) else { throw Retry() }
                if !shared, try created || Sys.secondsSinceModified(fd, path: path) > tidyIntervalSeconds {
                    tidy(created)
                    try Sys.touch(fd, path: path)
                }
            } catch let error as SystemError {
                throw StorageError(error, shared ? .reading : .writing)
            }
            defer {
                // Still under the lock: a waiter finds the file gone and starts again.
                if !shared, !holdsData() { _ = try? Sys.unlink(path) }
            }
            return try body()
        }
    }
}
