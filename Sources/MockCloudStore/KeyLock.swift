import Glibc
import MockCloudSystem

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
    /// `<root>/.locks/<route>.<key>.lock`.
    package static func path(root: String, route: Route, key: UserKey) -> String {
        Sys.path(root, "/.locks/", route.name, ".", key.rawValue, ".lock")
    }

    /// True when the key's lock file exists: the key holds data, or a writer
    /// is about to store some. Also true when it cannot tell (a `.locks`
    /// that is not a folder): taking the lock then reports the problem.
    package static func exists(root: String, route: Route, key: UserKey) -> Bool {
        do {
            try Sys.checkDirectory(Sys.path(root, "/.locks"))
            return try Sys.linkStatus(path(root: root, route: route, key: key)) != nil
        } catch {
            return true
        }
    }

    /// Runs `body` while holding the lock of `route` and `key`, creating the
    /// lock file when it is missing. Exclusive holders: with `holdsData`,
    /// the lock file is removed after `body` (returned or thrown) when the
    /// key then holds nothing; when the lock file was new or untouched for
    /// `AtomicFile.staleAfterSeconds`, the temporary files that killed
    /// writers left in `sweeping` are removed first.
    package static func withLock<T>(
        root: String, route: Route, key: UserKey, shared: Bool = false,
        holdsData: (() -> Bool)? = nil, sweeping: [String] = [], _ body: () throws -> T
    ) throws -> T {
        var result: T?
        try locked(root: root, route: route, key: key, shared: shared, create: true,
                   holdsData: holdsData, sweeping: sweeping) { result = try body() }
        return result!
    }

    /// Runs `body` under the lock when the key's lock file exists; `nil`,
    /// without running `body` or creating anything, when it does not (the
    /// key holds no data).
    package static func withExistingLock<T>(
        root: String, route: Route, key: UserKey, shared: Bool = false, _ body: () throws -> T
    ) throws -> T? {
        var result: T?
        try locked(root: root, route: route, key: key, shared: shared, create: false,
                   holdsData: nil, sweeping: []) { result = try body() }
        return result
    }

    private static func locked(
        root: String, route: Route, key: UserKey, shared: Bool, create: Bool,
        holdsData: (() -> Bool)?, sweeping: [String], _ body: () throws -> Void
    ) throws {
        let directory = Sys.path(root, "/.locks")
        let path = self.path(root: root, route: route, key: key)
        // Readers lock a read-only descriptor: a read-only data directory
        // still has its lock files to share.
        let access = shared ? O_RDONLY : O_RDWR
        while true {
            let fd: Int32
            var created = false
            do {
                try Sys.checkDirectory(directory)
                do {
                    fd = try Sys.open(path, access | O_NOFOLLOW)
                } catch let error as SystemError where error.errno == ENOENT {
                    guard create else { return }
                    try Sys.makeDirectories(directory)
                    do {
                        fd = try Sys.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
                        created = true
                    } catch let error as SystemError where error.errno == EEXIST {
                        continue  // another writer made it first: take theirs
                    }
                }
            } catch let error as SystemError where shared && error.isNotWritable {
                // A read-only data directory has no writers to wait for.
                return try body()
            } catch let error as SystemError {
                throw StorageError(error, shared ? .reading : .writing)
            }
            let done = try Sys.closing(fd) { fd -> Bool in
                do {
                    try Sys.lock(fd, shared: shared, path: path)
                    // Removed (its key's data gone) while this process waited.
                    guard try Sys.isStill(fd, at: path) else { return false }
                    if !shared, !sweeping.isEmpty, try created || Sys.secondsSinceModified(fd, path: path) > AtomicFile.staleAfterSeconds {
                        for folder in sweeping { AtomicFile.sweepStaleTemporaries(in: folder) }
                        try Sys.touch(fd, path: path)
                    }
                } catch let error as SystemError {
                    throw StorageError(error, shared ? .reading : .writing)
                }
                defer {
                    // Still under the lock: a waiter finds the file gone and starts again.
                    if !shared, let holdsData, !holdsData() { _ = try? Sys.unlink(path) }
                }
                try body()
                return true
            }
            if done { return }
        }
    }
}
