import MockCloudSystem

/// How long a read may be held for a change (`?wait=` on the feed and on
/// settings, docs/API.md §3 and §4), and what ends it early.
package struct WaitLimit: Sendable {
    /// When the wait ends, on the monotonic clock (`Sys.monotonicNanos`).
    package let deadline: Int64
    /// Where the answer goes (a CGI program's stdout): once its reader is
    /// gone (fcgiwrap stopped), nobody will read the answer and the wait ends.
    package let output: FileDescriptor?

    package init(seconds: Int, output: FileDescriptor?) {
        deadline = Sys.monotonicNanos() + Int64(seconds) * 1_000_000_000
        self.output = output
    }

    /// Runs `isDone` again after each change on the way to `file` (a path
    /// under `root`) until it returns true or the wait ends. The watch is
    /// armed before each look, so that a change committed between a look
    /// and the sleep still wakes it; no lock is held while it sleeps (each
    /// look takes what it needs). Takes one of the box's `Waiting.atOnce`
    /// places for as long as it sleeps.
    package func waitForChange(of file: String, under root: String, _ isDone: () throws -> Bool) throws {
        var watch: ChangeWatch
        do {
            watch = try ChangeWatch()
        } catch let error as SystemError {
            throw Waiting.failure(error)
        }
        defer { watch.close() }
        let place = try Waiting.takePlace(root: root)
        defer { Sys.close(place) }
        while true {
            do {
                try watch.follow(file, under: root)
            } catch let error as SystemError {
                throw Waiting.failure(error)
            }
            if try isDone() { return }
            let wake: ChangeWatch.Wake
            do {
                wake = try watch.sleep(until: deadline, watching: output)
            } catch let error as SystemError {
                throw StorageError(error, .reading)
            }
            if wake != .changed { return }
        }
    }
}

/// The box's capacity for waiting requests, and how it is shared.
///
/// Each waiting request holds an fcgiwrap process (and its own program) for
/// up to `WireLimits.waitSeconds` seconds. fcgiwrap runs `fcgiwrapProcesses`
/// (the launcher and the package's unit both start it with `-c` that many),
/// and at most `atOnce` requests wait at once, so that the rest, one
/// address's cap of 16 requests in progress, always serve requests that do
/// not wait. A wait past `atOnce` is refused at once (503 with
/// `Retry-After`), never queued behind the others.
package enum Waiting {
    /// Requests that may wait at once, on the whole box.
    package static let atOnce = 48
    /// fcgiwrap's processes (`-c`): `atOnce` and 16 more.
    package static let fcgiwrapProcesses = 64
    /// What a wait refused for want of a place tells the client to wait.
    package static let retryAfterSeconds = 5

    /// Takes a free place (`<root>/.locks/waiting.<n>.lock`, held with
    /// `flock` until closed or the process ends, a kill included); throws
    /// `WaitError.tooManyWaiting` when all `atOnce` are held. A data
    /// directory this process cannot write counts no places (`.closed`).
    static func takePlace(root: String) throws -> FileDescriptor {
        let directory = Sys.path(root, "/.locks")
        do {
            try Sys.checkDirectory(directory)
            try Sys.makeDirectories(directory)
        } catch let error as SystemError {
            if error.isNotWritable { return .closed }
            throw StorageError(error, .reading)
        }
        let first = Int(Sys.processID) % atOnce
        for step in 0..<atOnce {
            let path = Sys.path(directory, "/waiting.", String((first + step) % atOnce), ".lock")
            let fd: FileDescriptor
            do {
                fd = try Sys.open(path, .readWrite | .create | .noFollow, mode: 0o600)
            } catch let error as SystemError {
                if error.isNotWritable { return .closed }
                throw StorageError(error, .reading)
            }
            do {
                if try Sys.tryLock(fd, path: path) { return fd }
            } catch let error as SystemError {
                Sys.close(fd)
                throw StorageError(error, .reading)
            }
            Sys.close(fd)
        }
        throw WaitError.tooManyWaiting(limit: atOnce)
    }

    /// A failure to set up the watch: out of inotify instances or watches
    /// (another kind of "too many waiting"), or the reading failure it is.
    static func failure(_ error: SystemError) -> any Error {
        switch error.errno {
        case .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noSpace, .outOfMemory:
            return WaitError.tooManyWaiting(limit: atOnce)
        default: return StorageError(error, .reading)
        }
    }
}

/// Why a read could not wait.
package enum WaitError: Error, Equatable, CustomStringConvertible {
    /// Every place for a waiting request is taken, or the system has no
    /// more file watches for one.
    case tooManyWaiting(limit: Int)

    package var description: String {
        switch self {
        case .tooManyWaiting(let limit):
            return "a read asked to wait while \(limit) others wait (or the system's inotify watches ran out)"
        }
    }
}
