/// A whole file written in steps into its temporary (`.~<name>`, as
/// `AtomicFile` names them) and put in place at once by `commit`: synced,
/// renamed over `name`, the directory fsynced. Until then the file at `name`
/// is as it was, and `abandon` removes the temporary. For a file too large
/// to write while its writer holds a lock others wait on: the bulk is
/// written and synced first, the last bytes and the rename under the lock.
/// Its maker must be the only writer of that temporary name (a leftover of
/// a killed one is replaced).
package struct PendingFile {
    package let directory: String
    package let name: String
    private let temporary: String
    /// `closed` once synced for the rename, or abandoned.
    private var fd: FileDescriptor
    /// True until the temporary was renamed into place or removed.
    private var isPending = true
    /// The bytes written so far: the end of the file.
    package private(set) var size = 0

    /// Creates the temporary, empty. Throws `AtomicWriteError` (`.nothing`),
    /// as every step before `commit`'s rename does.
    package init(_ name: String, in directory: String) throws {
        self.directory = directory
        self.name = name
        do {
            (temporary, fd) = try AtomicFile.createTemporary(for: name, in: directory)
        } catch let error as SystemError {
            throw AtomicWriteError(error, .nothing)
        }
    }

    /// Adds `bytes` at the end.
    package mutating func append(_ bytes: [UInt8]) throws {
        try write(bytes, at: size)
        size += bytes.count
    }

    /// Writes `bytes` over what is at `offset` (within what was written).
    package func write(_ bytes: [UInt8], at offset: Int) throws {
        do {
            try Sys.write(fd, bytes, at: offset, path: temporary)
        } catch let error as SystemError {
            throw AtomicWriteError(error, .nothing)
        }
    }

    /// Makes what was written so far durable (`fdatasync`): a later `commit`
    /// then syncs only what came after.
    package func sync() throws {
        do {
            try Sys.fdatasync(fd, path: temporary)
        } catch let error as SystemError {
            throw AtomicWriteError(error, .nothing)
        }
    }

    /// Syncs the file, renames it over `name` and fsyncs the directory. A
    /// failure before the rename leaves `name` as it was (`.nothing`) and
    /// removes the temporary; after it, `.all`.
    package mutating func commit() throws {
        do {
            try Sys.fdatasync(fd, path: temporary)
            Sys.close(fd)
            fd = .closed
            try Sys.rename(temporary, Sys.path(directory, "/", name))
            isPending = false
        } catch let error as SystemError {
            abandon()
            throw AtomicWriteError(error, .nothing)
        }
        try AtomicFile.syncAfterCommit(directory)
    }

    /// Closes and removes the temporary, best effort; nothing once committed.
    package mutating func abandon() {
        if fd != .closed { Sys.close(fd) }
        fd = .closed
        if isPending { _ = try? Sys.unlink(temporary) }
        isPending = false
    }
}
