import Glibc

// The process itself: its environment, identity, signals, clock alarm and
// exit, and replacing it with another program. What the CGI programs and
// the admin tool need of these, wrapped once like the file calls.
extension Sys {
    /// The value of the environment variable `name`; the first, when the
    /// environment holds it more than once. A long value is kept until exit
    /// (`KeepUntilExit`).
    package static func environmentValue(_ name: String) -> String? {
        name.withCString { getenv($0) }.map { KeepUntilExit.keep(String(cString: $0)) }
    }

    /// How many `NAME=` entries this process's environment holds.
    package static func environmentCount(_ name: String) -> Int {
        name.withCString { cName in
            let length = strlen(cName)
            var count = 0
            var entry = environ
            while let line = entry.pointee {
                // The first byte alone rules out most entries, without a call.
                if line[0] == cName[0] && strncmp(line, cName, length) == 0 && line[length] == 0x3D { count += 1 }
                entry += 1
            }
            return count
        }
    }

    /// Ends the process now with `status`, flushing nothing.
    package static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }

    /// Asks for SIGALRM in `seconds` (0: none), replacing any earlier alarm.
    package static func setAlarm(seconds: UInt32) {
        _ = alarm(seconds)
    }

    /// A write to a closed pipe fails with `EPIPE` instead of ending the process.
    package static func ignoreBrokenPipes() {
        _ = signal(SIGPIPE, SIG_IGN)
    }

    /// SIGINT and SIGTERM ignored from now on, for a caller that watches for
    /// them itself (a Dispatch signal source) to end cleanly; their numbers.
    package static func takeOverInterrupts() -> [Int32] {
        _ = signal(SIGINT, SIG_IGN)
        _ = signal(SIGTERM, SIG_IGN)
        return [SIGINT, SIGTERM]
    }

    /// True when `fd` is a terminal (a person watches: progress lines are welcome).
    package static func isTerminal(_ fd: FileDescriptor) -> Bool {
        isatty(fd.rawValue) == 1
    }

    /// Sleeps `milliseconds` (`nanosleep(2)`, resumed after a signal).
    package static func sleep(milliseconds: Int) {
        var left = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var rest = timespec()
        while nanosleep(&left, &rest) == -1 && Glibc.errno == EINTR { left = rest }
    }

    /// This process's id.
    package static var processID: Int32 { getpid() }

    /// The first connected stream socket among descriptors 3 to 63 (not a
    /// listening one), or nil: for a CGI program, which opens no socket of
    /// its own, the connection it inherited. fcgiwrap leaves its FastCGI
    /// connection to the server open in every program it starts, and the
    /// server closes that connection when the client goes away.
    package static func inheritedConnection() -> FileDescriptor? {
        for fd in Int32(3)..<64 {
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { continue }
            var type: Int32 = 0
            var listening: Int32 = 1
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0, type == Int32(SOCK_STREAM.rawValue) else { continue }
            size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening == 0 else { continue }
            return FileDescriptor(rawValue: fd)
        }
        return nil
    }

    /// True when this process runs as root.
    package static var isRoot: Bool { geteuid() == 0 }

    /// The owner (user and group ids) of what is at `path`, links followed.
    package static func owner(of path: String) throws -> (user: UInt32, group: UInt32) {
        var info = stat()
        _ = try path.withCString { cPath in try retrying("stat", path) { stat(cPath, &info) } }
        return (info.st_uid, info.st_gid)
    }

    /// The permission and type bits of an open file (`st_mode`).
    package static func mode(_ fd: FileDescriptor, path: String = "") throws -> UInt32 {
        try status(fd, path: path).st_mode
    }

    /// Drops root for `user` and `group`, with no supplementary groups.
    package static func become(user: UInt32, group: UInt32) throws {
        _ = try retrying("setgroups", "") { setgroups(0, nil) }
        _ = try retrying("setgid", "") { setgid(group) }
        _ = try retrying("setuid", "") { setuid(user) }
    }

    /// True when `path` is a file this process may execute.
    package static func isExecutable(_ path: String) -> Bool {
        path.withCString { access($0, X_OK) } == 0
    }

    /// Replaces this process with the program at `path`; returns only when
    /// it cannot, with the reason.
    package static func execute(_ path: String, arguments: [String]) -> SystemError {
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) }
        argv.append(nil)
        execv(path, &argv)
        return SystemError("execv", path: path, errno: Glibc.errno)
    }

    /// This program's own file (`/proc/self/exe`), or `nil` when unknown.
    package static func executablePath() -> String? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { raw in
            raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) {
                readlink("/proc/self/exe", $0, raw.count - 1)
            }
        }
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length], as: UTF8.self)
    }
}

// What a signal handler may call: a handler is a C function that runs
// between any two instructions of the process, so it touches only globals
// and allocates nothing. The handlers themselves are their users'
// (a CGI program's last words: `LastWords`).
extension Sys {
    /// A signal handler: a C function of the signal's number.
    package typealias SignalHandler = @convention(c) (Int32) -> Void

    /// Runs `handler` when the alarm `setAlarm` asks for goes off, from now on.
    package static func onAlarm(_ handler: SignalHandler) {
        _ = signal(SIGALRM, handler)
    }

    /// Runs `handler` on a fault the process cannot go on from (a trap of a
    /// Swift runtime check, a bad access, an abort), from now on. The
    /// signals are a literal here, not an array handed over: a process that
    /// has made no array of their type would pay the runtime to describe one.
    package static func onFault(_ handler: SignalHandler) {
        for fault in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT] { _ = signal(fault, handler) }
    }

    /// Writes `text` to `fd` in one `write(2)`, whatever comes of it: what
    /// a signal handler may do.
    package static func writeFromHandler(_ fd: Int32, _ text: StaticString) {
        _ = Glibc.write(fd, text.utf8Start, text.utf8CodeUnitCount)
    }

    /// Ends the process by the signal `number` itself, as if nothing had
    /// caught it (its default action: a parent sees the signal): what a
    /// signal handler may do.
    package static func dieFromHandler(by number: Int32) -> Never {
        _ = signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        _ = sigprocmask(SIG_UNBLOCK, &set, nil)
        _ = raise(number)
        _exit(128 + number)    // not reached: the default action of a fault ends the process
    }

    /// Ends the process at once (`_exit(2)`: no cleanup, no flushing): what
    /// a signal handler may do.
    package static func exitFromHandler(_ status: Int32) -> Never {
        _exit(status)
    }
}
