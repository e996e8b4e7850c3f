import MockCloudSystem

/// How long a read may be held for a change (`?wait=` on the feed and on
/// settings, docs/API.md §3 and §4), and what ends it early.
package struct WaitLimit: Sendable {
    /// When the wait ends, on the monotonic clock (`Sys.monotonicNanos`).
    package let deadline: Int64
    /// Where the answer goes (a CGI program's stdout): once its reader is
    /// gone (fcgiwrap stopped), nobody will read the answer and the wait ends.
    package let output: FileDescriptor?
    /// How many requests may wait at once on the whole box (each holds one
    /// of these places while it sleeps): the deployment's to say.
    package let places: Int

    package init(seconds: Int, output: FileDescriptor?, places: Int) {
        deadline = Sys.monotonicNanos() + Int64(seconds) * 1_000_000_000
        self.output = output
        self.places = places
    }

    /// Runs `isDone` again after each change on the way to `file` (a path
    /// under `root`) until it returns true or the wait ends. The watch is
    /// armed before each look, so that a change committed between a look
    /// and the sleep still wakes it; no lock is held while it sleeps (each
    /// look takes what it needs). Takes one of the box's `places` for as
    /// long as it sleeps.
    package func waitForChange(of file: String, under root: String, _ isDone: () throws -> Bool) throws {
        var watch: ChangeWatch
        do {
            watch = try ChangeWatch()
        } catch let error as SystemError {
            throw Waiting.failure(error, places: places)
        }
        defer { watch.close() }
        let place = try Waiting.takePlace(root: root, places: places)
        defer { Sys.close(place) }
        while true {
            do {
                try watch.follow(file, under: root)
            } catch let error as SystemError {
                throw Waiting.failure(error, places: places)
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

/// The places of the box's waiting requests, and how they are shared.
///
/// Each waiting request holds an fcgiwrap process (and its own program) for
/// up to `WireLimits.waitSeconds` seconds, so at most as many wait at once
/// as the deployment has places for (`WaitLimit.places`). A wait past them
/// is refused at once (`WaitError.tooManyWaiting`), never queued behind the
/// others.
package enum Waiting {
    /// Takes a free place (`<root>/.locks/waiting.<n>.lock`, held with
    /// `flock` until closed or the process ends, a kill included); throws
    /// `WaitError.tooManyWaiting` when all `places` are held. A data
    /// directory this process cannot write counts no places (`.closed`).
    static func takePlace(root: String, places atOnce: Int) throws -> FileDescriptor {
        let data = DataDirectory(root)
        do {
            try data.makeLocks()
        } catch let error as SystemError {
            if error.isNotWritable { return .closed }
            throw StorageError(error, .reading)
        }
        let first = Int(Sys.processID) % atOnce
        for step in 0..<atOnce {
            let path = data.waitingPlace((first + step) % atOnce)
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
    static func failure(_ error: SystemError, places atOnce: Int) -> any Error {
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
