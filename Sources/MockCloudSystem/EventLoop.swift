import Glibc

// What one process that holds many connections at once needs (the FastCGI
// mode's process for waits): sockets that never block, one `poll(2)` over
// all of them, and a file limit raised to hold them. Wrapped once, like the
// file calls.
extension Sys {
    /// Makes `fd` non-blocking: a read or write with nothing to do returns at once.
    package static func setNonBlocking(_ fd: FileDescriptor) throws {
        let flags = try retrying("fcntl", "") { fcntl(fd.rawValue, F_GETFL) }
        _ = try retrying("fcntl", "") { fcntl(fd.rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// The next connection waiting on a non-blocking listening socket
    /// (itself non-blocking, close-on-exec), or `nil` when none waits.
    package static func acceptIfWaiting(_ listening: FileDescriptor) throws -> FileDescriptor? {
        while true {
            let fd = systemAccept4(listening.rawValue, nil, nil, Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue))
            if fd >= 0 { return FileDescriptor(rawValue: fd) }
            let code = Glibc.errno
            switch code {
            case EINTR, ECONNABORTED: continue
            case EAGAIN: return nil
            default: throw SystemError("accept4", errno: code)
            }
        }
    }

    /// What a non-blocking read finds: up to `count` bytes, empty at the end
    /// of the stream, `nil` when nothing has come yet.
    package static func readIfReady(_ fd: FileDescriptor, count: Int, path: String = "") throws -> [UInt8]? {
        var wouldBlock = false
        let bytes = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            while true {
                let got = Glibc.read(fd.rawValue, buffer.baseAddress!, count)
                if got >= 0 {
                    initialized = got
                    return
                }
                let code = Glibc.errno
                if code == EINTR { continue }
                if code == EAGAIN {
                    wouldBlock = true
                    return
                }
                throw SystemError("read", path: path, errno: code)
            }
        }
        return wouldBlock ? nil : bytes
    }

    /// Writes what a non-blocking `fd` takes now of `bytes`: how many (0
    /// when it takes none until it is writable again). A failure throws.
    package static func writeIfReady(_ fd: FileDescriptor, _ bytes: ArraySlice<UInt8>, path: String = "") throws -> Int {
        while true {
            let wrote = bytes.withUnsafeBytes { Glibc.write(fd.rawValue, $0.baseAddress, $0.count) }
            if wrote >= 0 { return wrote }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN { return 0 }
            throw SystemError("write", path: path, errno: code)
        }
    }

    /// One descriptor's part in `waitForAny`: what is asked, what came.
    package struct Readiness: Sendable {
        package var fd: FileDescriptor
        package var wantsWrite: Bool
        /// Something to read (or the end of the stream).
        package var readable = false
        package var writable = false
        /// An error, or the other end hung up.
        package var gone = false

        package init(_ fd: FileDescriptor, wantsWrite: Bool = false) {
            self.fd = fd
            self.wantsWrite = wantsWrite
        }
    }

    /// Sleeps until one of `entries` is ready or `milliseconds` pass (-1:
    /// no limit), then sets what each one is ready for. A signal ends the
    /// sleep early, with nothing set.
    package static func waitForAny(_ entries: inout [Readiness], milliseconds: Int32) throws {
        var fds = entries.map {
            pollfd(fd: $0.fd.rawValue, events: Int16(POLLIN) | ($0.wantsWrite ? Int16(POLLOUT) : 0), revents: 0)
        }
        guard let ready = try Sys.pollOnce(&fds, milliseconds: milliseconds), ready > 0 else { return }
        for i in entries.indices {
            let events = fds[i].revents
            entries[i].readable = events & Int16(POLLIN) != 0
            entries[i].writable = events & Int16(POLLOUT) != 0
            entries[i].gone = events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
        }
    }

    /// Raises this process's limit of open files to `count` (at most the
    /// hard limit); the limit it has now.
    @discardableResult
    package static func raiseFileLimit(to count: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let wanted = rlim_t(count)
        if limit.rlim_cur < wanted {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}
