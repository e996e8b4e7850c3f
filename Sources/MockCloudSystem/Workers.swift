import Glibc

// What a FastCGI program needs beyond a CGI one: a listening socket (its own
// or one systemd hands over), connections taken from it, and a master that
// forks its workers, reaps them and forwards a stop. Wrapped once, like the
// file calls.
extension Sys {
    /// A Unix stream socket listening at `path` (an old socket file there is
    /// replaced), readable and writable by its owner and group only, so that
    /// nginx's workers reach it through the group the launcher gives it.
    package static func listen(unixPath path: String, backlog: Int32 = 1024) throws -> FileDescriptor {
        let fd = try retrying("socket", path) { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let room = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < room else {
            Glibc.close(fd)
            throw SystemError("bind", path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        _ = path.withCString { Glibc.unlink($0) }
        do {
            _ = try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    try retrying("bind", path) { bind(fd, socketAddress, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            _ = try path.withCString { cPath in try retrying("chmod", path) { chmod(cPath, 0o660) } }
            _ = try retrying("listen", path) { Glibc.listen(fd, backlog) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return FileDescriptor(rawValue: fd)
    }

    /// The first socket systemd passed (`LISTEN_FDS` for this process,
    /// `LISTEN_PID`), descriptor 3; `nil` when none was passed to this process.
    package static func socketFromSystemd() -> FileDescriptor? {
        guard let count = environmentValue("LISTEN_FDS").flatMap({ Int($0) }), count >= 1,
            let pid = environmentValue("LISTEN_PID").flatMap({ Int32($0) }), pid == getpid()
        else { return nil }
        let fd: Int32 = 3
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return FileDescriptor(rawValue: fd)
    }

    /// The next connection on a listening socket, close-on-exec.
    package static func accept(_ listening: FileDescriptor) throws -> FileDescriptor {
        let fd = try retrying("accept", "") { systemAccept4(listening.rawValue, nil, nil, Int32(SOCK_CLOEXEC.rawValue)) }
        return FileDescriptor(rawValue: fd)
    }

    /// One `read(2)` of up to `count` bytes: what is there now (empty at the
    /// end of the stream).
    package static func readSome(_ fd: FileDescriptor, count: Int, path: String = "") throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            initialized = try retrying("read", path) { Glibc.read(fd.rawValue, buffer.baseAddress!, count) }
        }
    }

    /// A copy of this process (`fork(2)`): 0 in the child, the child's id in
    /// the parent.
    package static func fork() throws -> Int32 {
        try retrying("fork", "") { Glibc.fork() }
    }

    /// How a child ended.
    package enum ChildEnd: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
    }

    /// What woke a master's wait.
    package enum Wake: Sendable, Equatable {
        /// A child ended.
        case child(pid: Int32, end: ChildEnd)
        /// A signal's handler ran (a stop, say): the caller reads its flag.
        case signal
        /// No child is left to wait for.
        case noChildren
        /// The time given ran out first.
        case timedOut
    }

    /// Waits for a child to end or a signal to come, without the race of a
    /// flag checked before a blocking wait: the caller keeps SIGTERM, SIGINT
    /// and SIGCHLD blocked (`holdMasterSignals`), so a signal that comes
    /// after its check stays pending until `sigsuspend` lets it through
    /// here, and the wait returns instead of sleeping on with a stop unseen.
    /// With `milliseconds`, it waits no longer than that (`pselect` lets the
    /// signals through as `sigsuspend` does, with a time limit).
    package static func awaitChildOrSignal(milliseconds: Int? = nil) -> Wake {
        var status: Int32 = 0
        let pid = waitpid(-1, &status, WNOHANG)
        if pid > 0 {
            let signal = status & 0x7f
            return .child(pid: pid, end: signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal))
        }
        // With no child, a timed wait still sleeps its time (a master
        // waiting to start one): only an untimed one would sleep for good.
        if pid < 0 && errno == ECHILD && milliseconds == nil { return .noChildren }
        var open = sigset_t()
        sigemptyset(&open)
        guard let milliseconds else {
            _ = sigsuspend(&open)    // returns once a handler has run
            return .signal
        }
        var limit = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        return pselect(0, nil, nil, nil, &limit, &open) == 0 ? .timedOut : .signal
    }

    /// A master's signals: SIGTERM and SIGINT run `onStop` (which sets a
    /// flag), SIGCHLD only wakes `awaitChildOrSignal`, and all three stay
    /// blocked outside it. A worker lets them through again
    /// (`resetForWorker`).
    package static func holdMasterSignals(onStop: SignalHandler) {
        onTerminate(onStop)
        var wake = sigaction()
        wake.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&wake.sa_mask)
        wake.sa_flags = 0
        _ = sigaction(SIGCHLD, &wake, nil)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGCHLD)
        _ = sigprocmask(SIG_BLOCK, &set, nil)
    }

    /// Sends `signal` (`terminate`, `kill`) to the process `pid`.
    package static func send(_ signal: Int32, to pid: Int32) {
        _ = Glibc.kill(pid, signal)
    }

    /// SIGTERM's and SIGKILL's numbers, and their names for a log line.
    package static let terminate = SIGTERM
    package static let kill = SIGKILL

    /// A signal's name (`SIGSEGV`), for a log line.
    package static func signalName(_ number: Int32) -> String {
        guard let text = strsignal(number) else { return "signal \(number)" }
        return "signal \(number) (\(String(cString: text)))"
    }

    /// Runs `handler` on SIGTERM and SIGINT, without restarting the call
    /// they interrupt (so that a blocking `waitForChild` returns).
    package static func onTerminate(_ handler: SignalHandler) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        _ = sigaction(SIGTERM, &action, nil)
        _ = sigaction(SIGINT, &action, nil)
    }

    /// SIGTERM and SIGINT back to their default (ending the process),
    /// children reaped by the system (a worker's upkeep processes), a
    /// SIGTERM when the parent (the pool's master) ends, however it ends,
    /// and no signal blocked.
    package static func resetForWorker() {
        _ = signal(SIGTERM, SIG_DFL)
        _ = signal(SIGINT, SIG_DFL)
        _ = signal(SIGCHLD, SIG_IGN)
        _ = systemPrctl(1, UInt(SIGTERM), 0, 0, 0)    // PR_SET_PDEATHSIG (linux/prctl.h)
        unblockAllSignals()    // the master's held signals (holdMasterSignals)
    }

    /// No signal blocked: a server started with some blocked (inherited from
    /// whoever started it) would never see its alarm or its stop.
    package static func unblockAllSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        _ = sigprocmask(SIG_SETMASK, &set, nil)
    }

    /// Holds SIGTERM and SIGINT back (`true`) while a request is served, or
    /// lets them through again (`false`), a held one at once.
    package static func holdTermination(_ hold: Bool) {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        _ = sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
    }

    /// Writes `count` bytes from `bytes` to `fd` in one `write(2)`,
    /// whatever comes of it: what a signal handler may do.
    package static func writeFromHandler(_ fd: Int32, _ bytes: UnsafeRawPointer, count: Int) {
        _ = Glibc.write(fd, bytes, count)
    }
}

/// `accept4(2)`, a GNU extension that Glibc's module leaves out, bound by its C symbol.
@_silgen_name("accept4")
func systemAccept4(_ fd: Int32, _ address: UnsafeMutableRawPointer?, _ length: UnsafeMutableRawPointer?, _ flags: Int32) -> Int32

/// `prctl(2)`, variadic in C, bound by its C symbol with its five arguments.
@_silgen_name("prctl")
private func systemPrctl(_ option: Int32, _ a: UInt, _ b: UInt, _ c: UInt, _ d: UInt) -> Int32
