import Glibc

/// Watches the entries of one folder (inotify) for a program that sends
/// each file the moment it is complete: closed after writing, or renamed
/// into the folder. A file still open for writing reports nothing until it
/// is closed, so a half-written file is never taken for a whole one.
/// Files also arrive in ways that close nothing: a hard link (`ln`,
/// `rsync --link-dest`) is a creation, a `chmod` that makes a file
/// readable or a `touch` a change of attributes. Those are reported as
/// `touched`: maybe whole, maybe a file just created for writing.
///
/// Only the names `wanted` accepts are reported (a sync tool's messages,
/// not its own state files or an editor's swap files). Events are hints:
/// the reader looks at each reported name on disk, so a name reported
/// twice costs one look. When the kernel's queue overflowed, events were
/// lost, and the reader must look at the whole folder (`overflowed`).
package struct FolderWatch: Sendable {
    /// Readable when events are queued: for `poll`, or a dispatch read source.
    package let fd: FileDescriptor
    /// The folder, as given.
    package let path: String
    private let wanted: @Sendable (String) -> Bool

    /// The entries' changes, and the folder's own end.
    private static let events = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
        | IN_CREATE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Starts watching `path` (a folder; a symbolic link to one is followed).
    /// Throws a `SystemError` naming `inotify_add_watch` and the path when it
    /// is missing, not a folder or not readable.
    package init(_ path: String, wanted: @escaping @Sendable (String) -> Bool) throws {
        let fd = try Inotify.open()
        do {
            _ = try Inotify.addWatch(fd, path, Self.events | UInt32(IN_ONLYDIR))
        } catch {
            Sys.close(fd)
            throw error
        }
        self.fd = fd
        self.path = path
        self.wanted = wanted
    }

    package func close() {
        Sys.close(fd)
    }

    /// Adds what is queued now to `changes`, without waiting.
    package func read(into changes: inout FolderChanges) throws {
        try Inotify.drain(fd) { _, mask, nameBytes in
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                changes.overflowed = true
            } else if mask & UInt32(IN_DELETE_SELF) != 0 {
                changes.folderGone = changes.folderGone ?? "it was removed"
            } else if mask & UInt32(IN_MOVE_SELF) != 0 {
                changes.folderGone = changes.folderGone ?? "it was moved or renamed"
            } else if mask & UInt32(IN_UNMOUNT) != 0 {
                changes.folderGone = changes.folderGone ?? "its file system was unmounted"
            } else if mask & UInt32(IN_ISDIR) == 0, !nameBytes.isEmpty {
                let name = String(decoding: nameBytes, as: UTF8.self)
                guard wanted(name) else { return }
                let change: FolderChanges.Change = mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 ? .removed
                    : mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 ? .complete : .touched
                changes.merge(FolderChanges(names: [name: change]))
            }
        }
    }

    /// Waits until something is queued or `deadline` (`Sys.monotonicNanos`)
    /// passes, then reads it; the changes, empty when the deadline passed.
    /// Events the reader does not want do not end the wait.
    package func wait(until deadline: Int64) throws -> FolderChanges {
        var changes = FolderChanges()
        var ready = [pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)]
        while changes.isEmpty, try Sys.poll(&ready, until: deadline) {
            if ready[0].revents & Int16(POLLIN) != 0 { try read(into: &changes) }
        }
        return changes
    }
}

/// What a `FolderWatch` reported since it was last asked.
package struct FolderChanges: Sendable, Equatable {
    /// What became of an entry, by its last event.
    package enum Change: Sendable, Equatable {
        /// Closed after writing, or renamed into the folder: whole, to read.
        case complete
        /// Deleted, or renamed out of the folder.
        case removed
        /// Created (a hard link, or a file opened to be written), or its
        /// mode, owner or times changed: whole, or still being written. The
        /// reader looks; one that does not read yet will report `complete`
        /// once closed, so it is no problem yet.
        case touched
    }

    /// Each wanted entry that changed, by name.
    package var names: [String: Change] = [:]
    /// Events were lost (the kernel's queue overflowed): look at every entry.
    package var overflowed = false
    /// Why the folder itself is gone (removed, moved, unmounted): no entry
    /// of it will be reported again.
    package var folderGone: String?

    package init(names: [String: Change] = [:], overflowed: Bool = false, folderGone: String? = nil) {
        self.names = names
        self.overflowed = overflowed
        self.folderGone = folderGone
    }

    /// Nothing to act on.
    package var isEmpty: Bool { names.isEmpty && !overflowed && folderGone == nil }

    /// `later`'s changes on top of these: a name's later change wins,
    /// but a touch does not make a complete file a doubtful one.
    package mutating func merge(_ later: FolderChanges) {
        names.merge(later.names) { old, new in old == .complete && new == .touched ? old : new }
        overflowed = overflowed || later.overflowed
        folderGone = folderGone ?? later.folderGone
    }
}
