import Glibc

/// Whole-file writes that a crash cannot tear: a unique temporary file in the
/// same directory (`O_EXCL`), fsync, rename over the target, fsync the directory.
package enum AtomicFile {
    /// Replaces `name` in `directory` with `bytes`, creating the directory
    /// (0700) when it is missing. Throws `StorageError` and leaves the old file.
    package static func write(_ bytes: [UInt8], to name: String, in directory: String) throws {
        var batch = AtomicBatch(directory: directory)
        try batch.stage(bytes, as: name)
        try batch.commit()
    }

    /// fsyncs the directory of a change that is already in place.
    static func syncAfterCommit(_ directory: String) throws {
        do {
            try Sys.syncDirectory(directory)
        } catch let error as SystemError {
            throw StorageError(error, .syncingAfterCommit)
        }
    }

    /// Removes `name` from `directory` (durably: the directory is synced);
    /// false when it was not there.
    package static func remove(_ name: String, in directory: String, durably: Bool = true) throws -> Bool {
        do {
            guard try Sys.unlink(Sys.path(directory, "/", name)) else { return false }
        } catch let error as SystemError {
            throw StorageError(error, .writing)
        }
        if durably { try syncAfterCommit(directory) }
        return true
    }

    /// Reads `name` from `directory`; `nil` when it does not exist.
    package static func read(_ name: String, in directory: String) throws -> [UInt8]? {
        do {
            return try Sys.readFile(Sys.path(directory, "/", name), flags: O_NOFOLLOW)
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
    }

    /// The prefix of every temporary file: `~` is in no user key and no
    /// message id, so a temporary file is never taken for a document.
    package static let temporaryPrefix = ".~"

    /// `.~<name>`, created with `O_EXCL`. Every write holds its key's lock, so
    /// a file already there is a leftover of a writer that was killed: it is
    /// removed and the name reused, and no crash leaves more than one behind
    /// per document.
    static func createTemporary(for name: String, in directory: String) throws -> (String, Int32) {
        let path = Sys.path(directory, "/", temporaryPrefix, name)
        do {
            return (path, try Sys.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600))
        } catch let error as SystemError where error.errno == EEXIST {
            try Sys.unlink(path)
            return (path, try Sys.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600))
        }
    }

    /// Seconds after which a temporary file is a killed writer's leftover:
    /// longer than any request may run (a CGI program answers 503 and exits
    /// at 25 s, `CGIProgram.timeLimitSeconds`), so no live writer has one
    /// this old.
    package static let staleAfterSeconds = 30

    /// Removes the temporary files of `directory` older than
    /// `staleAfterSeconds`: a writer killed mid-write leaves `.~<name>`,
    /// which only a later write of the same name would replace, and most
    /// message ids are never written again.
    @discardableResult
    package static func sweepStaleTemporaries(in directory: String) -> Int {
        Sys.removeStale(in: directory, prefix: temporaryPrefix, olderThan: staleAfterSeconds)
    }
}
