import Glibc

/// The one layer over the C library: every system call the service makes
/// goes through here (a test fails a `Glibc` import anywhere else in
/// Sources/), with descriptors, open options and errors as types. Each call
/// retries `EINTR`, loops over partial reads and writes, and throws a
/// `SystemError` with its `Errno`.
package enum Sys {
    /// Runs `body` until it stops failing with `EINTR`; a `-1` result throws.
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(
        _ call: String, _ path: String, _ body: () -> T
    ) throws -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Glibc.errno
            if code != EINTR { throw SystemError(call, path: path, errno: code) }
        }
    }

    /// Runs `body` again while it fails with `EINTR`; its result, with
    /// `errno` set, otherwise (for the calls whose failure is an answer).
    @inline(__always)
    static func interruptible(_ body: () -> Int32) -> Int32 {
        var result: Int32
        repeat { result = body() } while result == -1 && Glibc.errno == EINTR
        return result
    }

    /// A path, or a file name, from up to six pieces, in one string of
    /// exactly their size. `a + "/" + b` grows a string twice and can leave
    /// it twice the room it needs, and a native string with room for 64 bytes
    /// or more has a slot for UTF-16 breadcrumbs: the first release of such a
    /// string makes the runtime look up a type by its name
    /// (Benchmarks/README.md, "Where the time goes"). A CGI process keeps its
    /// long paths until it exits instead (`KeepUntilExit`). The pieces are
    /// arguments, not an array: freeing an array of strings runs generic code.
    package static func path(
        _ a: String, _ b: String, _ c: String = "", _ d: String = "", _ e: String = "", _ f: String = ""
    ) -> String {
        let count = a.utf8.count + b.utf8.count + c.utf8.count + d.utf8.count + e.utf8.count + f.utf8.count
        let path = String(unsafeUninitializedCapacity: count) { buffer in
            var end = 0
            func copy(_ part: String) {
                var part = part
                part.withUTF8 { utf8 in
                    guard let source = utf8.baseAddress, let target = buffer.baseAddress else { return }
                    (target + end).initialize(from: source, count: utf8.count)
                    end += utf8.count
                }
            }
            copy(a)
            copy(b)
            copy(c)
            copy(d)
            copy(e)
            copy(f)
            return end
        }
        return KeepUntilExit.keep(path)
    }

    // Paths reach C through `withCString`, which hands over a native
    // string's own bytes; passing a String where C wants a pointer copies
    // it into a new array every time.

    /// `open(2)` with `O_CLOEXEC`.
    package static func open(_ path: String, _ options: OpenOptions, mode: mode_t = 0o600) throws -> FileDescriptor {
        FileDescriptor(rawValue: try path.withCString { cPath in
            try retrying("open", path) { Glibc.open(cPath, options.rawValue | O_CLOEXEC, mode) }
        })
    }

    /// `close(2)`; errors are ignored because the descriptor is gone either way.
    package static func close(_ fd: FileDescriptor) {
        _ = Glibc.close(fd.rawValue)
    }

    /// Runs `body` with `fd` and closes it on every path.
    package static func closing<T>(_ fd: FileDescriptor, _ body: (FileDescriptor) throws -> T) rethrows -> T {
        defer { close(fd) }
        return try body(fd)
    }

    /// Reads until end of file, or until `limit` bytes when given. The buffer
    /// is sized from the file's size (or the limit), not zero-filled.
    package static func readAll(_ fd: FileDescriptor, path: String = "", limit: Int = Int.max) throws -> [UInt8] {
        var chunk = min(limit, 65536)
        var info = stat()
        if Glibc.fstat(fd.rawValue, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            chunk = min(limit, Int(info.st_size) + 1)
        }
        chunk = max(chunk, 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 1)
        defer { buffer.deallocate() }
        var out: [UInt8] = []
        out.reserveCapacity(min(chunk, limit))
        while out.count < limit {
            let want = min(chunk, limit - out.count)
            let got = try retrying("read", path) { Glibc.read(fd.rawValue, buffer.baseAddress!, want) }
            if got == 0 { break }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
        }
        return out
    }

    /// Writes every byte, looping over partial writes.
    package static func writeAll(_ fd: FileDescriptor, _ bytes: [UInt8], path: String = "") throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                offset += try retrying("write", path) {
                    Glibc.write(fd.rawValue, raw.baseAddress! + offset, raw.count - offset)
                }
            }
        }
    }

    /// `pread(2)` of up to `count` bytes at `offset`; fewer at end of file.
    package static func read(_ fd: FileDescriptor, count: Int, at offset: Int, path: String = "") throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = try out.withUnsafeMutableBytes { raw in
                try retrying("pread", path) {
                    Glibc.pread(fd.rawValue, raw.baseAddress! + got, count - got, off_t(offset + got))
                }
            }
            if n == 0 { break }
            got += n
        }
        out.removeLast(count - got)
        return out
    }

    /// `pwrite(2)` of every byte at `offset`.
    package static func write(_ fd: FileDescriptor, _ bytes: [UInt8], at offset: Int, path: String = "") throws {
        try bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                done += try retrying("pwrite", path) {
                    Glibc.pwrite(fd.rawValue, raw.baseAddress! + done, raw.count - done, off_t(offset + done))
                }
            }
        }
    }

    /// `ftruncate(2)`.
    package static func truncate(_ fd: FileDescriptor, to size: Int, path: String = "") throws {
        _ = try retrying("ftruncate", path) { Glibc.ftruncate(fd.rawValue, off_t(size)) }
    }

    /// `fdatasync(2)`: the data and the size, without the other metadata.
    package static func fdatasync(_ fd: FileDescriptor, path: String = "") throws {
        _ = try retrying("fdatasync", path) { Glibc.fdatasync(fd.rawValue) }
    }

    /// The size of an open file.
    package static func size(_ fd: FileDescriptor, path: String = "") throws -> Int {
        Int(try status(fd, path: path).st_size)
    }

    /// `fstat(2)` of an open file.
    static func status(_ fd: FileDescriptor, path: String) throws -> stat {
        var info = stat()
        _ = try retrying("fstat", path) { Glibc.fstat(fd.rawValue, &info) }
        return info
    }

    /// `fsync(2)`.
    package static func fsync(_ fd: FileDescriptor, path: String = "") throws {
        _ = try retrying("fsync", path) { Glibc.fsync(fd.rawValue) }
    }

    /// `rename(2)`.
    package static func rename(_ from: String, _ to: String) throws {
        _ = try from.withCString { cFrom in
            try to.withCString { cTo in try retrying("rename", to) { Glibc.rename(cFrom, cTo) } }
        }
    }

    /// `unlink(2)`; returns false when the file was not there.
    @discardableResult
    package static func unlink(_ path: String) throws -> Bool {
        do {
            _ = try path.withCString { cPath in try retrying("unlink", path) { Glibc.unlink(cPath) } }
            return true
        } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
            return false
        }
    }

    /// `flock(2)`: waits until this process holds the lock, shared or exclusive.
    package static func lock(_ fd: FileDescriptor, shared: Bool, path: String = "") throws {
        _ = try retrying("flock", path) { systemFlock(fd.rawValue, shared ? LOCK_SH : LOCK_EX) }
    }

    /// Creates `path` and its missing parents with `mode`; existing
    /// directories are fine, anything else already at `path` (a symbolic
    /// link someone planted) throws (`checkDirectory`).
    /// A directory it creates is fsynced into its parent, so that the files
    /// later made durable in it cannot vanish with it in a power loss.
    package static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws {
        if try makeDirectory(path, mode: mode) { return }
        let code = Glibc.errno
        if code == EEXIST { return try checkDirectory(path) }
        if code == ENOENT, case let parent = parent(of: path), parent != "/", parent != "." {
            try makeDirectories(parent, mode: mode)
            if try makeDirectory(path, mode: mode) || Glibc.errno == EEXIST { return }
            throw SystemError("mkdir", path: path, errno: Glibc.errno)
        }
        throw SystemError("mkdir", path: path, errno: code)
    }

    /// `mkdir(2)`, retried on `EINTR`; true when it made the directory (then
    /// its parent is fsynced), false with `errno` set when it did not.
    private static func makeDirectory(_ path: String, mode: mode_t) throws -> Bool {
        let result = path.withCString { cPath in interruptible { Glibc.mkdir(cPath, mode) } }
        guard result == 0 else { return false }
        try syncDirectory(parent(of: path))
        return true
    }

    /// The folder `path` is in: what comes before its last `/` ("/" for a
    /// top-level path, "." for a bare name). Bytes, not Characters: a
    /// Character search runs the grapheme machinery for what one byte tells.
    static func parent(of path: String) -> String {
        var path = path
        return path.withUTF8 { utf8 in
            guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
            if slash == 0 { return "/" }
            return KeepUntilExit.keep(String(decoding: UnsafeBufferPointer(rebasing: utf8[..<slash]), as: UTF8.self))
        }
    }

    /// Reads a whole file; `nil` when it does not exist. `flags` are added
    /// to `O_RDONLY` (`O_NOFOLLOW` for the data directory's files).
    package static func readFile(_ path: String, options: OpenOptions = .readOnly) throws -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try open(path, options)
        } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        defer { close(fd) }
        return try readAll(fd, path: path)
    }

    /// `syncfs(2)` on the file system holding `path`: every file written there
    /// is durable afterwards, for the price of one journal commit.
    package static func syncFileSystem(of path: String) throws {
        let fd = try open(path, .directory)
        defer { close(fd) }
        _ = try retrying("syncfs", path) { systemSyncfs(fd.rawValue) }
    }

    /// fsyncs a directory so that a rename or unlink in it survives power loss.
    package static func syncDirectory(_ path: String) throws {
        let fd = try open(path, .directory | .noFollow)
        defer { close(fd) }
        try fsync(fd, path: path)
    }

    /// Opens a file already written and closed, and waits for its data to
    /// be written back: after a `syncfs(2)` this is no disk work, and it is
    /// what reports a writeback error of that file (`syncfs` returns 0 after
    /// one before Linux 5.8 and, since, misses one another caller has
    /// already seen, while a new descriptor still sees an error nobody has
    /// reported). `sync_file_range(2)` with both waits reports it as fsync
    /// would, without fsync's flush of the device's cache for every file
    /// (`syncfs` flushed it once): about 0.05 ms an item of a bulk.
    package static func checkWriteback(_ path: String) throws {
        let fd = try open(path, .noFollow)
        defer { close(fd) }
        _ = try retrying("sync_file_range", path) {
            systemSyncFileRange(fd.rawValue, 0, 0, syncFileRangeWaitBefore | syncFileRangeWrite | syncFileRangeWaitAfter)
        }
    }

    /// The size of the file system that holds `path` and what an
    /// unprivileged writer may still use there (`statvfs(3)`, one
    /// `statfs(2)`: free blocks less the root reserve), in bytes.
    package static func space(of path: String) throws -> FileSystemSpace {
        var info = statvfs()
        _ = try path.withCString { cPath in try retrying("statvfs", path) { statvfs(cPath, &info) } }
        return FileSystemSpace(
            size: Int64(info.f_blocks) * Int64(info.f_frsize), available: Int64(info.f_bavail) * Int64(info.f_frsize))
    }

    /// `flock(2)` without waiting: false when another process holds a
    /// conflicting lock.
    package static func tryLock(_ fd: FileDescriptor, path: String = "") throws -> Bool {
        do {
            _ = try retrying("flock", path) { systemFlock(fd.rawValue, LOCK_EX | LOCK_NB) }
            return true
        } catch let error as SystemError where error.errno == .wouldBlock {
            return false
        }
    }

    /// The names in `directory` that start with `prefix` ("": all), without
    /// `.` and `..`, in directory order; empty when it does not exist.
    package static func names(in directory: String, prefix: String = "") throws -> [String] {
        guard let handle = directory.withCString({ Glibc.opendir($0) }) else {
            let code = Glibc.errno
            if code == ENOENT || code == ENOTDIR { return [] }
            throw SystemError("opendir", path: directory, errno: code)
        }
        defer { Glibc.closedir(handle) }
        var names: [String] = []
        while true {
            Glibc.errno = 0
            guard let entry = Glibc.readdir(handle) else {
                if Glibc.errno != 0 { throw SystemError("readdir", path: directory, errno: Glibc.errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." || !name.hasPrefix(prefix) { continue }
            names.append(name)
        }
    }
}

// Files the service did not make: a data directory is the service's own,
// and a symbolic link in it was planted by someone else. Opens there use
// `O_NOFOLLOW` (a link fails with `ELOOP`), and the directories on the way
// are checked with `lstat`.
extension Sys {
    /// `lstat(2)` of `path` itself, a link not followed, into `info`; false
    /// when nothing is there. (Not an optional `stat`: Optional's metadata
    /// for a C struct is built at run time, in every CGI process.)
    package static func linkStatus(_ path: String, _ info: inout stat) throws -> Bool {
        if path.withCString({ Glibc.lstat($0, &info) }) == 0 { return true }
        let code = Glibc.errno
        if code == ENOENT { return false }
        throw SystemError("lstat", path: path, errno: code)
    }

    /// True when something (a link too) is at `path`; false when nothing is,
    /// or when it cannot tell.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return path.withCString { Glibc.lstat($0, &info) } == 0
    }

    /// Throws when something other than a directory is at `path`: `ELOOP`
    /// for a symbolic link, `ENOTDIR` for anything else. Nothing there is fine.
    package static func checkDirectory(_ path: String) throws {
        var info = stat()
        guard try linkStatus(path, &info) else { return }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return
        case S_IFLNK: throw SystemError("lstat", path: path, errno: ELOOP)
        default: throw SystemError("lstat", path: path, errno: ENOTDIR)
        }
    }

    /// Throws when something other than a folder is in place of one on the
    /// way from `root` down to `a/b/c` ("" ends the way early): `ELOOP` for
    /// a symbolic link, `ENOTDIR` for another file. A missing folder ends
    /// the check. Walks with `openat(O_NOFOLLOW)`, so that no path string is
    /// built unless there is an error to name.
    package static func checkFolders(under root: String, _ a: String, _ b: String = "", _ c: String = "") throws {
        var fd = root.withCString { cRoot in interruptible { Glibc.open(cRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } }
        if fd < 0 { return }  // the data directory itself: its own opens report it
        defer { if fd >= 0 { Glibc.close(fd) } }
        for step in 0..<3 {
            let name = step == 0 ? a : step == 1 ? b : c
            if name.isEmpty { return }
            let next = name.withCString { cName in
                interruptible { Glibc.openat(fd, cName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            }
            var code = Glibc.errno
            if next < 0 && code == ENOTDIR {
                // O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR: say which.
                var info = stat()
                if name.withCString({ Glibc.fstatat(fd, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0,
                    info.st_mode & S_IFMT == S_IFLNK
                {
                    code = ELOOP
                }
            }
            Glibc.close(fd)
            fd = next
            if next >= 0 { continue }
            if code == ENOENT { return }
            let shown = step == 0 ? path(root, "/", a) : step == 1 ? path(root, "/", a, "/", b) : path(path(root, "/", a), "/", b, "/", c)
            throw SystemError("open", path: shown, errno: code)
        }
    }

    /// True when the open `fd` is still the file at `path` (same device and
    /// inode): false once it was unlinked or replaced.
    package static func isStill(_ fd: FileDescriptor, at path: String) throws -> Bool {
        let held = try status(fd, path: path)
        var there = stat()
        guard try linkStatus(path, &there) else { return false }
        return there.st_dev == held.st_dev && there.st_ino == held.st_ino
    }

    /// Whole seconds since `fd`'s file was last modified.
    package static func secondsSinceModified(_ fd: FileDescriptor, path: String = "") throws -> Int {
        Int(Glibc.time(nil)) - Int(try status(fd, path: path).st_mtim.tv_sec)
    }

    /// Sets `fd`'s modification time to now (`futimens(2)`).
    package static func touch(_ fd: FileDescriptor, path: String = "") throws {
        _ = try retrying("futimens", path) { Glibc.futimens(fd.rawValue, nil) }
    }

    /// Microseconds since the Unix epoch, UTC, from the system clock.
    package static func realtimeMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec / 1000)
    }
}

// The process's own output, for work done after a CGI answer.
extension Sys {
    /// Points stdout and stderr at /dev/null: the server that reads them
    /// (fcgiwrap) then ends the request, while this process goes on.
    package static func detachOutput() {
        let null = interruptible { Glibc.open("/dev/null", O_WRONLY | O_CLOEXEC) }
        guard null >= 0 else {
            Glibc.close(1)
            Glibc.close(2)
            return
        }
        _ = Glibc.dup2(null, 1)
        _ = Glibc.dup2(null, 2)
        Glibc.close(null)
    }

    /// One line to syslog (the daemon facility, error level) under `ident`:
    /// where a process whose stderr is gone reports a failure.
    package static func logToSystem(ident: String, _ line: String) {
        ident.withCString { cIdent in
            openlog(cIdent, LOG_PID, LOG_DAEMON)
            line.withCString { cLine in
                withVaList([cLine]) { vsyslog(LOG_ERR, "%s", $0) }
            }
            closelog()
        }
    }
}

/// `flock(2)`: Glibc's module also has `struct flock`, which hides the function
/// from Swift, so it is bound here by its C symbol.
@_silgen_name("flock")
private func systemFlock(_ fd: Int32, _ operation: Int32) -> Int32

/// `syncfs(2)`: a GNU extension that Glibc's module leaves out, bound by its C symbol.
@_silgen_name("syncfs")
private func systemSyncfs(_ fd: Int32) -> Int32

/// `sync_file_range(2)`, likewise a GNU extension, and its flags (linux/fs.h).
@_silgen_name("sync_file_range")
private func systemSyncFileRange(_ fd: Int32, _ offset: Int64, _ count: Int64, _ flags: UInt32) -> Int32
private let syncFileRangeWaitBefore: UInt32 = 1
private let syncFileRangeWrite: UInt32 = 2
private let syncFileRangeWaitAfter: UInt32 = 4
