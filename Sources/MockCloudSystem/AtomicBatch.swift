/// Whole-file replacements in one directory made durable together: each file
/// is written to its own temporary file, then all of them are synced, renamed
/// into place in the order they were staged, and the directory is fsynced
/// once. A crash leaves each target either old or new, never torn.
/// `AtomicFile.write` is a batch of one; `POST /inbox:bulk` stages hundreds.
///
/// A file staged as not `visible` (a MAC sidecar that accepts the old and the
/// new document alike) changes nothing a reader can see: a failure before
/// the first visible rename has shown a reader `.nothing`, one after it
/// `.part`, and a failed fsync after every rename `.all`
/// (`AtomicWriteError.Seen`).
package struct AtomicBatch {
    package let directory: String
    /// The first file is kept in plain properties and only the others in
    /// arrays: a single write then builds no array, and a process that
    /// never used an array type does not pay the runtime to describe it.
    private var firstTemporary = ""
    /// `closed` when none is open (not an optional: see above).
    private var firstFD = FileDescriptor.closed
    private var otherTemporaries: [String] = []
    /// Still open while the batch is small: it fsyncs each file, which on a
    /// busy disk costs less than syncing the whole file system.
    private var otherFDs: [FileDescriptor] = []
    private var staged = 0
    /// The index of the first file a reader would see change (`Int.max`: none).
    private var firstVisible = Int.max
    /// Up to this many files are fsynced one by one; more are synced with one
    /// `syncfs(2)` (one journal commit instead of one per file), and then each
    /// one's writeback is checked by path, which reports what `syncfs` may miss.
    static let fsyncEachUpTo = 3

    package init(directory: String) {
        self.directory = directory
    }

    package var isEmpty: Bool { staged == 0 }

    /// Writes `bytes` to the temporary file of `name`. Throws
    /// `AtomicWriteError` (`.nothing`); nothing is in place until `commit`.
    package mutating func stage(_ bytes: [UInt8], as name: String, visible: Bool = true) throws {
        do {
            if staged == 0 { try Sys.makeDirectories(directory) }
            let (temporary, fd) = try AtomicFile.createTemporary(for: name, in: directory)
            if staged == 0 { firstTemporary = temporary } else { otherTemporaries.append(temporary) }
            if visible && firstVisible == Int.max { firstVisible = staged }
            staged += 1
            do {
                try Sys.writeAll(fd, bytes, path: temporary)
            } catch {
                Sys.close(fd)
                throw error
            }
            if staged == 1 {
                firstFD = fd
            } else if staged <= Self.fsyncEachUpTo {
                otherFDs.append(fd)
            } else {
                Sys.close(fd)
                closeOpen()
            }
        } catch let error as SystemError {
            abandon()
            throw AtomicWriteError(error, .nothing)
        }
    }

    /// Syncs every staged file, renames them into place in order, fsyncs the
    /// directory. A failure before the first visible rename leaves every
    /// target as a reader saw it; the temporaries not renamed are removed.
    /// `beforeVisibleChange` runs just before the first visible rename (a
    /// CGI program notes there that its answer may no longer say "nothing
    /// changed").
    package mutating func commit(beforeVisibleChange: () -> Void = {}) throws {
        guard staged > 0 else { return }
        do {
            if staged <= Self.fsyncEachUpTo {
                try Sys.fsync(firstFD, path: firstTemporary)
                for index in otherFDs.indices { try Sys.fsync(otherFDs[index], path: otherTemporaries[index]) }
            } else {
                try Sys.syncFileSystem(of: directory)
                for index in 0..<staged { try Sys.checkWriteback(temporary(index)) }
            }
            closeOpen()
        } catch let error as SystemError {
            abandon()
            throw AtomicWriteError(error, .nothing)
        }
        for index in 0..<staged {
            let temporary = temporary(index)
            do {
                if index == firstVisible { beforeVisibleChange() }
                // `.~<name>` → `<name>`, beside it.
                let name = temporary.utf8.dropFirst(directory.utf8.count + 1 + AtomicFile.temporaryPrefix.utf8.count)
                try Sys.rename(temporary, Sys.path(directory, "/", String(decoding: name, as: UTF8.self)))
            } catch let error as SystemError {
                for rest in index..<staged { _ = try? Sys.unlink(self.temporary(rest)) }
                let seen: AtomicWriteError.Seen = index > firstVisible ? .part : .nothing
                reset()
                throw AtomicWriteError(error, seen)
            }
        }
        reset()
        try AtomicFile.syncAfterCommit(directory)
    }

    /// Removes whatever is staged and not yet renamed.
    package mutating func abandon() {
        closeOpen()
        if staged > 0 { _ = try? Sys.unlink(firstTemporary) }
        for temporary in otherTemporaries { _ = try? Sys.unlink(temporary) }
        reset()
    }

    private func temporary(_ index: Int) -> String {
        index == 0 ? firstTemporary : otherTemporaries[index - 1]
    }

    private mutating func reset() {
        staged = 0
        firstVisible = Int.max
        otherTemporaries = []
    }

    private mutating func closeOpen() {
        if firstFD != .closed { Sys.close(firstFD) }
        firstFD = .closed
        for fd in otherFDs { Sys.close(fd) }
        otherFDs = []
    }
}
