import Glibc

/// Why storage failed, in words for the client; the `SystemError` goes to stderr.
package struct StorageError: HTTPResponseError {
    /// The failed call, with its errno.
    package let cause: SystemError
    /// True when the failure happened while changing data (nothing was written).
    package let writing: Bool
    /// True when the change was already in place and only making it durable failed.
    package let afterCommit: Bool

    package init(_ cause: SystemError, writing: Bool, afterCommit: Bool = false) {
        self.cause = cause
        self.writing = writing
        self.afterCommit = afterCommit
    }

    package var status: Int { writing && cause.isNoSpace && !afterCommit ? 507 : 500 }

    package var message: String {
        if afterCommit {
            return "the change was made but syncing the data directory failed; it may not survive a power loss"
        }
        let outcome = writing ? "; nothing was written and the stored data is unchanged" : ""
        if cause.isNoSpace { return "the data directory is full" + outcome }
        if cause.isNotWritable {
            return (writing ? "the data directory is not writable" : "the stored data is not readable") + outcome
        }
        return (writing ? "storage failed" : "reading the stored data failed") + outcome
    }

    package var logDetail: String? { cause.description }
}

/// Whole-file writes that a crash cannot tear: a unique temporary file in the
/// same directory (`O_EXCL`), fsync, rename over the target, fsync the directory.
package enum AtomicFile {
    /// Replaces `name` in `directory` with `bytes`, creating the directory
    /// (0700) when it is missing. Throws `StorageError` and leaves the old file.
    package static func write(_ bytes: [UInt8], to name: String, in directory: String) throws {
        do {
            try Sys.makeDirectories(directory)
            let target = Sys.path(directory, "/", name)
            let (temporary, fd) = try createTemporary(for: name, in: directory)
            do {
                try Sys.closing(fd) { fd in
                    try Sys.writeAll(fd, bytes, path: temporary)
                    try Sys.fsync(fd, path: temporary)
                }
                try Sys.rename(temporary, target)
            } catch {
                _ = try? Sys.unlink(temporary)
                throw error
            }
        } catch let error as SystemError {
            throw StorageError(error, writing: true)
        }
        try syncAfterCommit(directory)
    }

    /// fsyncs the directory of a change that is already in place.
    private static func syncAfterCommit(_ directory: String) throws {
        do {
            try Sys.syncDirectory(directory)
        } catch let error as SystemError {
            throw StorageError(error, writing: true, afterCommit: true)
        }
    }

    /// Removes `name` from `directory` (durably: the directory is synced);
    /// false when it was not there.
    package static func remove(_ name: String, in directory: String, durably: Bool = true) throws -> Bool {
        do {
            guard try Sys.unlink(Sys.path(directory, "/", name)) else { return false }
        } catch let error as SystemError {
            throw StorageError(error, writing: true)
        }
        if durably { try syncAfterCommit(directory) }
        return true
    }

    /// Reads `name` from `directory`; `nil` when it does not exist.
    package static func read(_ name: String, in directory: String) throws -> [UInt8]? {
        do {
            return try Sys.readFile(Sys.path(directory, "/", name))
        } catch let error as SystemError {
            throw StorageError(error, writing: false)
        }
    }

    /// The prefix of every temporary file: `~` is in no user key and no
    /// message id, so a temporary file is never taken for a document.
    package static let temporaryPrefix = ".~"

    /// `.~<name>`, created with `O_EXCL`. Every write holds its key's lock, so
    /// a file already there is a leftover of a writer that was killed: it is
    /// removed and the name reused, and no crash leaves more than one behind
    /// per document.
    private static func createTemporary(for name: String, in directory: String) throws -> (String, Int32) {
        let path = Sys.path(directory, "/", temporaryPrefix, name)
        do {
            return (path, try Sys.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600))
        } catch let error as SystemError where error.errno == EEXIST {
            try Sys.unlink(path)
            return (path, try Sys.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600))
        }
    }
}

/// Per-key locks (`flock`) on files under `<data>/.locks/`: writers on one key
/// are serialised, readers of a key's feed share the lock so that they never
/// see a write half done, and different keys never wait for each other.
package enum KeyLock {
    /// Runs `body` while holding the lock named `scope.key`.
    package static func withLock<T>(
        root: String, scope: String, key: UserKey, shared: Bool = false, _ body: () throws -> T
    ) throws -> T {
        let directory = Sys.path(root, "/.locks")
        let path = Sys.path(directory, "/", scope, ".", key.rawValue, ".lock")
        let fd: Int32
        do {
            do {
                fd = try Sys.open(path, O_RDWR | O_CREAT, mode: 0o600)
            } catch let error as SystemError where error.errno == ENOENT {
                try Sys.makeDirectories(directory)
                fd = try Sys.open(path, O_RDWR | O_CREAT, mode: 0o600)
            }
        } catch let error as SystemError where shared && error.isNotWritable {
            // A read-only data directory has no writers to wait for.
            guard let readOnly = try? Sys.open(path, O_RDONLY) else { return try body() }
            fd = readOnly
        } catch let error as SystemError {
            throw StorageError(error, writing: !shared)
        }
        return try Sys.closing(fd) { fd in
            do {
                try Sys.lock(fd, shared: shared, path: path)
            } catch let error as SystemError {
                throw StorageError(error, writing: !shared)
            }
            return try body()
        }
    }
}
