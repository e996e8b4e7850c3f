import Glibc

/// Whole-file replacements in one directory made durable together: each file
/// is written to its own temporary file, then all of them are synced at once,
/// renamed into place in the order they were staged, and the directory is
/// fsynced once. A crash leaves each target either old or new, never torn.
/// `AtomicFile.write` is a batch of one; `POST /inbox:bulk` stages hundreds.
package struct AtomicBatch {
    package let directory: String
    private var staged: [(temporary: String, target: String)] = []
    /// The last staged file, still open: a small batch fsyncs each file,
    /// which on a busy disk costs less than syncing the whole file system.
    private var open: [Int32] = []
    /// Up to this many files are fsynced one by one; more are synced with one
    /// `syncfs(2)` (one journal commit instead of one per file).
    static let fsyncEachUpTo = 3

    package init(directory: String) {
        self.directory = directory
    }

    package var isEmpty: Bool { staged.isEmpty }

    /// Writes `bytes` to the temporary file of `name`. Throws `StorageError`;
    /// nothing is in place until `commit`.
    package mutating func stage(_ bytes: [UInt8], as name: String) throws {
        do {
            if staged.isEmpty { try Sys.makeDirectories(directory) }
            let (temporary, fd) = try AtomicFile.createTemporary(for: name, in: directory)
            staged.append((temporary, Sys.path(directory, "/", name)))
            do {
                try Sys.writeAll(fd, bytes, path: temporary)
            } catch {
                Sys.close(fd)
                throw error
            }
            if staged.count <= Self.fsyncEachUpTo {
                open.append(fd)
            } else {
                Sys.close(fd)
                closeOpen()
            }
        } catch let error as SystemError {
            abandon()
            throw StorageError(error, .writing)
        }
    }

    /// Syncs every staged file, renames them into place in order, fsyncs the
    /// directory. A failure before the first rename leaves every target as it was.
    package mutating func commit() throws {
        guard !staged.isEmpty else { return }
        do {
            if open.count == staged.count {
                for (fd, file) in zip(open, staged) { try Sys.fsync(fd, path: file.temporary) }
            } else {
                try Sys.syncFileSystem(of: directory)
            }
            closeOpen()
        } catch let error as SystemError {
            abandon()
            throw StorageError(error, .writing)
        }
        for (index, file) in staged.enumerated() {
            do {
                try Sys.rename(file.temporary, file.target)
            } catch let error as SystemError {
                staged.removeFirst(index)
                abandon()
                throw StorageError(error, index > 0 ? .syncingAfterCommit : .writing)
            }
        }
        staged = []
        do {
            try Sys.syncDirectory(directory)
        } catch let error as SystemError {
            throw StorageError(error, .syncingAfterCommit)
        }
    }

    /// Removes whatever is staged and not yet renamed.
    package mutating func abandon() {
        closeOpen()
        for file in staged { _ = try? Sys.unlink(file.temporary) }
        staged = []
    }

    private mutating func closeOpen() {
        for fd in open { Sys.close(fd) }
        open = []
    }
}
