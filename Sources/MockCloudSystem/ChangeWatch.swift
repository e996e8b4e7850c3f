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
    /// Each watch's name: the entry of its folder that leads to a followed file.
    private var names: [Int32: String] = [:]

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

    /// Watches the way to `file` (a path under `root`, which must exist):
    /// the deepest folder of it that exists now, for the next name.
    package mutating func follow(_ file: String, under root: String) throws {
        var folder = Sys.parent(of: file)
        var name = Self.lastComponent(of: file)
        while true {
            do {
                names[try Inotify.addWatch(fd, folder, Self.events | Self.flags)] = name
                return
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
        try Inotify.drain(fd) { watch, mask, name in
            if mask & Self.lost != 0 {
                if mask & UInt32(IN_IGNORED) != 0 { names[watch] = nil }
                relevant = true
            } else if let wanted = names[watch], name.elementsEqual(wanted.utf8) {
                relevant = true
            }
        }
        return relevant
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
            for i in fds.indices { fds[i].revents = 0 }
            let ready = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), milliseconds) }
            if ready > 0 { return true }
            if ready < 0 {
                let code = Glibc.errno
                if code != EINTR { throw SystemError("poll", errno: code) }
            }
        }
    }

    /// Nanoseconds on the monotonic clock: for deadlines, which a change of
    /// the wall clock must not move.
    package static func monotonicNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
