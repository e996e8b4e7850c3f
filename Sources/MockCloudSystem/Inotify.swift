import Glibc

/// What `ChangeWatch` and `FolderWatch` share: an inotify instance that
/// never blocks a read, and the reading of its queued events.
enum Inotify {
    /// A new instance, close-on-exec and non-blocking.
    static func open() throws -> FileDescriptor {
        FileDescriptor(rawValue: try Sys.retrying("inotify_init1", "") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) })
    }

    /// Watches `path` for `events` (`inotify_add_watch`); the watch's
    /// number. Throws a `SystemError` naming the call and the path.
    static func addWatch(_ fd: FileDescriptor, _ path: String, _ events: UInt32) throws -> Int32 {
        let watch = path.withCString { inotify_add_watch(fd.rawValue, $0, events) }
        guard watch >= 0 else { throw SystemError("inotify_add_watch", path: path, errno: Glibc.errno) }
        return watch
    }

    /// Reads every event queued on `fd` now and hands each to `body`: the
    /// watch it came from (-1 for `IN_Q_OVERFLOW`), its mask, and the name
    /// of the entry it concerns (empty for the watched folder itself).
    static func drain(_ fd: FileDescriptor, _ body: (Int32, UInt32, UnsafeRawBufferPointer) throws -> Void) throws {
        // Room for at least one event with the longest name (NAME_MAX 255).
        let size = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let got = Glibc.read(fd.rawValue, buffer.baseAddress!, size)
            if got < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                if code == EAGAIN { return }
                throw SystemError("read", path: "inotify", errno: code)
            }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len, then len bytes of
            // name (NUL-padded).
            while offset + 16 <= got {
                let watch = buffer.load(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.load(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                let padded = UnsafeRawBufferPointer(rebasing: buffer[(offset + 16)..<min(got, offset + 16 + length)])
                offset += 16 + length
                try body(watch, mask, UnsafeRawBufferPointer(rebasing: padded.prefix { $0 != 0 }))
            }
        }
    }
}
