import Glibc

/// Sleeps until a file may have changed (inotify): a request that waits for
/// a change holds no lock and uses no CPU until the kernel wakes it, or its
/// time runs out, or nobody is left to read its answer.
///
/// `follow` watches the folder that holds a file for the file's own name
/// (created, renamed into place or away, closed after writing, removed), or,
/// while that folder does not exist, the nearest folder above it that does,
/// for the next name on the way. A wake-up says only that something on the
/// way to a followed file moved: the caller looks again (and follows again,
/// which reaches further down once the folders exist), so a spurious wake
/// costs one look and a missed change is impossible once `follow` returned.
package struct ChangeWatch {
    private let fd: FileDescriptor
    /// Each watch's names: the entries of its folder that lead to a followed file.
    private var names: [Int32: Set<String>] = [:]

    /// What a watched folder reports: its entries' changes and its own end.
    private static let events = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF)
    /// Folders only, never through a symbolic link.
    private static let flags = UInt32(IN_ONLYDIR | IN_DONT_FOLLOW)
    /// `POLLRDHUP`: the socket's peer shut down its side (a GNU name the
    /// Glibc module does not import; Linux's value).
    private static let peerShutDown: Int16 = 0x2000
    /// The events that end a watch or lose events: always worth a look.
    private static let lost = UInt32(IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)

    /// A new inotify instance (close it with `close`).
    package init() throws {
        fd = try Inotify.open()
    }

    package func close() {
        Sys.close(fd)
    }

    /// What one `follow` watches: a folder's watch, for one of its entries.
    package struct Followed: Hashable, Sendable {
        package let watch: Int32
        package let name: String
    }

    /// The instance's descriptor, readable when events are queued (for a
    /// process that sleeps on it among other descriptors).
    package var descriptor: FileDescriptor { fd }

    /// Watches the way to `file` (a path under `root`, which must exist):
    /// the deepest folder of it that exists now, for the next name.
    @discardableResult
    package mutating func follow(_ file: String, under root: String) throws -> Followed {
        var folder = Sys.parent(of: file)
        var name = Self.lastComponent(of: file)
        while true {
            do {
                let watch = try Inotify.addWatch(fd, folder, Self.events | Self.flags)
                names[watch, default: []].insert(name)
                return Followed(watch: watch, name: name)
            } catch let error as SystemError
                where [.noSuchFileOrDirectory, .notDirectory].contains(error.errno) && folder.utf8.count > root.utf8.count
            {
                name = Self.lastComponent(of: folder)
                folder = Sys.parent(of: folder)
            }
        }
    }

    /// How a sleep ended.
    package enum Wake: Equatable {
        /// Something on the way to a followed file changed: look again.
        case changed
        /// The deadline passed.
        case timedOut
        /// The other end of one of the answer's paths is gone (the server
        /// that takes the answer stopped, or the client left).
        case abandoned
    }

    /// Sleeps until a followed file may have changed, until `deadline`
    /// (`Sys.monotonicNanos`), or until one of `answerPaths` (pipes or
    /// sockets towards whoever takes the answer) reports its other end gone:
    /// an error, a hang-up, or a socket's peer that shut down its side.
    /// Nothing is read from them.
    package mutating func sleep(until deadline: Int64, watching answerPaths: [FileDescriptor] = []) throws -> Wake {
        var fds = [pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)]
        for path in answerPaths { fds.append(pollfd(fd: path.rawValue, events: Self.peerShutDown, revents: 0)) }
        let gone = Int16(POLLERR | POLLHUP | POLLNVAL) | Self.peerShutDown
        while try Sys.poll(&fds, until: deadline) {
            if fds.dropFirst().contains(where: { $0.revents & gone != 0 }) { return .abandoned }
            if fds[0].revents & Int16(POLLIN) != 0, try readEvents() { return .changed }
        }
        return .timedOut
    }

    /// Reads every queued event; true when one concerns a followed file.
    private mutating func readEvents() throws -> Bool {
        var relevant = false
        try readEvents { _ in relevant = true }
        return relevant
    }

    /// Reads every queued event and hands on each one that concerns a
    /// followed file: its `Followed` (each of a watched folder that went
    /// away), or `nil` when any of them may have changed (events were lost).
    private mutating func readEvents(_ touched: (Followed?) -> Void) throws {
        try Inotify.drain(fd) { watch, mask, name in
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                touched(nil)
            } else if mask & Self.lost != 0 {
                // The watch's end (the ignored event of one `unfollow` removed
                // concerns nobody any more).
                for wanted in names[watch] ?? [] { touched(Followed(watch: watch, name: wanted)) }
                if mask & UInt32(IN_IGNORED) != 0 { names[watch] = nil }
            } else if let wanted = names[watch] {
                let entry = String(decoding: name, as: UTF8.self)
                if wanted.contains(entry) { touched(Followed(watch: watch, name: entry)) }
            }
        }
    }

    /// What the queued events concern, for a process that follows many
    /// files on one instance: the `Followed` they touched, or `nil` when
    /// every followed file may have changed. Each one's holder looks again
    /// (and follows again), as `sleep`'s caller does.
    package mutating func changes() throws -> Set<Followed>? {
        var touched: Set<Followed>? = []
        try readEvents { followed in
            if let followed { touched?.insert(followed) } else { touched = nil }
        }
        return touched
    }

    /// Stops watching for `followed` (nobody waits on it any more): its
    /// folder's watch ends with its last name.
    package mutating func unfollow(_ followed: Followed) {
        guard var wanted = names[followed.watch] else { return }
        wanted.remove(followed.name)
        if wanted.isEmpty {
            names[followed.watch] = nil
            _ = inotify_rm_watch(fd.rawValue, followed.watch)
        } else {
            names[followed.watch] = wanted
        }
    }

    /// What follows the last `/` of `path`.
    private static func lastComponent(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }
}

extension Sys {
    /// `poll(2)` on `fds` until one is ready or `deadline`
    /// (`monotonicNanos`) passes, whole milliseconds rounded up so that it
    /// never wakes before the deadline; `EINTR` waits again for what is
    /// left. True when one is ready (their `revents` say which), false
    /// when the deadline passed.
    package static func poll(_ fds: inout [pollfd], until deadline: Int64) throws -> Bool {
        while true {
            let left = deadline - monotonicNanos()
            if left <= 0 { return false }
            let milliseconds = Int32(clamping: (left + 999_999) / 1_000_000)
            if let ready = try pollOnce(&fds, milliseconds: milliseconds), ready > 0 { return true }
        }
    }

    /// One `poll(2)` of `fds` for at most `milliseconds` (-1: no limit),
    /// their `revents` cleared first: how many are ready (0 when the time
    /// ran out), or nil when a signal ended it.
    package static func pollOnce(_ fds: inout [pollfd], milliseconds: Int32) throws -> Int? {
        for i in fds.indices { fds[i].revents = 0 }
        let ready = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), milliseconds) }
        guard ready < 0 else { return Int(ready) }
        let code = Glibc.errno
        if code == EINTR { return nil }
        throw SystemError("poll", errno: code)
    }

    /// Nanoseconds on the monotonic clock: for deadlines, which a change of
    /// the wall clock must not move.
    package static func monotonicNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
