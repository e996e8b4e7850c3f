import Glibc

/// Whole-file writes that a crash cannot tear: a unique temporary file in the
/// same directory (`O_EXCL`), fsync, rename over the target, fsync the directory.
package enum AtomicFile {
    /// Replaces `name` in `directory` with `bytes`, creating the directory
    /// (0700) when it is missing. Throws `AtomicWriteError` and leaves the
    /// old file. `beforeVisibleChange`: as for `AtomicBatch.commit`.
    package static func write(
        _ bytes: [UInt8], to name: String, in directory: String, beforeVisibleChange: () -> Void = {}
    ) throws {
        var batch = AtomicBatch(directory: directory)
        try batch.stage(bytes, as: name)
        try batch.commit(beforeVisibleChange: beforeVisibleChange)
    }

    /// fsyncs the directory of a change that is already in place.
    static func syncAfterCommit(_ directory: String) throws {
        do {
            try Sys.syncDirectory(directory)
        } catch let error as SystemError {
            throw AtomicWriteError(error, .all)
        }
    }

    /// Removes `name` from `directory` (durably: the directory is synced);
    /// false when it was not there. Throws `AtomicWriteError`.
    package static func remove(_ name: String, in directory: String, durably: Bool = true) throws -> Bool {
        do {
            guard try Sys.unlink(Sys.path(directory, "/", name)) else { return false }
        } catch let error as SystemError {
            throw AtomicWriteError(error, .nothing)
        }
        if durably { try syncAfterCommit(directory) }
        return true
    }

    /// Reads `name` from `directory`; `nil` when it does not exist. Throws
    /// `SystemError`.
    package static func read(_ name: String, in directory: String) throws -> [UInt8]? {
        try Sys.readFile(Sys.path(directory, "/", name), options: .noFollow)
    }

    /// The prefix of every temporary file: `~` is in no user key and no
    /// message id, so a temporary file is never taken for a document.
    package static let temporaryPrefix = ".~"

    /// `.~<name>`, created with `O_EXCL`. Every write holds its key's lock, so
    /// a file already there is a leftover of a writer that was killed: it is
    /// removed and the name reused, and no crash leaves more than one behind
    /// per document.
    static func createTemporary(for name: String, in directory: String) throws -> (String, FileDescriptor) {
        let path = Sys.path(directory, "/", temporaryPrefix, name)
        do {
            return (path, try Sys.open(path, .writeOnly | .create | .exclusive | .noFollow, mode: 0o600))
        } catch let error as SystemError where error.errno == .exists {
            try Sys.unlink(path)
            return (path, try Sys.open(path, .writeOnly | .create | .exclusive | .noFollow, mode: 0o600))
        }
    }

    /// The documents of `directory` that have a temporary file: a writer's
    /// at work now, or what a killed one left (a temporary is replaced only
    /// by a later write of the same name, and most message ids are never
    /// written again). Empty when it cannot be listed.
    package static func documentsWithTemporaries(in directory: String) -> [String] {
        guard let names = try? Sys.names(in: directory, prefix: temporaryPrefix) else { return [] }
        return names.map { String($0.dropFirst(temporaryPrefix.count)) }
    }

    /// Removes the temporary file of `name`, if any, best effort: for a
    /// caller that knows no writer of `name` is at work.
    package static func removeTemporary(of name: String, in directory: String) {
        _ = try? Sys.unlink(Sys.path(directory, "/", temporaryPrefix, name))
    }

    /// Removes every temporary file of `directory`, best effort: for a
    /// caller that holds the lock every writer there takes.
    package static func removeTemporaries(in directory: String) {
        for name in documentsWithTemporaries(in: directory) { removeTemporary(of: name, in: directory) }
    }
}
