import MockCloudSystem

/// How long a read may be held for a change (`?wait=` on the feed and on
/// settings, docs/API.md §3 and §4), what ends it early, and whose share of
/// the box's places it takes.
package struct WaitLimit: Sendable {
    /// When the wait ends, on the monotonic clock (`Sys.monotonicNanos`).
    package let deadline: Int64
    /// The ways to whoever takes the answer (a CGI program's stdout, the
    /// server's connection it came by): once the other end of one of them
    /// is gone (fcgiwrap stopped, the client left), nobody will read the
    /// answer and the wait ends.
    package let answerPaths: [FileDescriptor]
    /// How many requests may wait at once on the whole box (each holds one
    /// of these places while it sleeps): the deployment's to say.
    package let places: Int
    /// The part of the box's places the client's address may hold; `nil`:
    /// none counted by address (a test, a tool, a box behind a proxy).
    package let share: WaitShare?
    /// Who holds the wait: this process, asleep, or a process that holds
    /// many at once.
    package let holder: Holder

    /// Who holds a wait while nothing is new.
    package enum Holder: Sendable {
        /// The process that asked, asleep on its own watch, holding one of
        /// the box's places (a CGI program, a FastCGI worker).
        case sleeping
        /// A process that holds many waits (the FastCGI mode's event loop):
        /// `follow` arms its watch of the file (under the root) and takes the
        /// wait's place, or throws the `WaitError` that refuses it; then one
        /// look, and with nothing new, `WaitHeld` is thrown: the holder
        /// answers the request later, by running it again.
        case holding(follow: @Sendable (_ limit: WaitLimit, _ file: String, _ root: String) throws -> Void)
        /// The wait is over: one last look, and its answer, whatever it is.
        case lastLook
    }

    package init(seconds: Int, places: Int, answerPaths: [FileDescriptor] = [], share: WaitShare? = nil,
                 holder: Holder = .sleeping) {
        deadline = Sys.monotonicNanos() + Int64(seconds) * 1_000_000_000
        self.places = places
        self.answerPaths = answerPaths
        self.share = share
        self.holder = holder
    }

    /// Runs `isDone` again after each change on the way to `file` (a path
    /// under `root`) until it returns true or the wait ends. The watch is
    /// armed before each look, so that a change committed between a look
    /// and the sleep still wakes it; no lock is held while it sleeps (each
    /// look takes what it needs). Takes one of the box's `places`, within
    /// its address's share, for as long as it sleeps.
    package func waitForChange(of file: String, under root: String, _ isDone: () throws -> Bool) throws {
        switch holder {
        case .sleeping: break
        case .lastLook:
            _ = try isDone()
            return
        case .holding(let follow):
            try follow(self, file, root)
            if try isDone() { return }
            throw WaitHeld()
        }
        var watch: ChangeWatch
        do {
            watch = try ChangeWatch()
        } catch let error as SystemError {
            throw Waiting.failure(error, places: places)
        }
        defer { watch.close() }
        let place = try Waiting.takePlace(root: root, places: places, share: share)
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
                wake = try watch.sleep(until: deadline, watching: answerPaths)
            } catch let error as SystemError {
                throw StorageError(error, .reading)
            }
            if wake != .changed { return }
        }
    }
}

/// Thrown by a wait whose holder is another process's loop
/// (`WaitLimit.Holder.holding`) when nothing is new yet: the request is
/// answered later, by the holder.
package struct WaitHeld: Error {
    package init() {}
}

/// One client address's part of the box's places for waiting requests: an
/// address holds at most `places` of them at once, so that a device that
/// keeps many waits open (broken or hostile, under one address or several)
/// leaves the rest to every other device's follows.
package struct WaitShare: Sendable, Equatable {
    /// The client's address as the server names it (`REMOTE_ADDR`).
    package let address: String
    /// The waits it may hold at once.
    package let places: Int
    /// The places of the whole server, and the setting that sets `places`,
    /// for the refusal's sentence (the CGI mode's 48 and
    /// `MOCKCLOUD_WAITS_PER_ADDRESS`, or the FastCGI loop's own).
    package let ofTotal: Int?
    package let setting: String

    package init(address: String, places: Int, ofTotal: Int? = nil, setting: String = "MOCKCLOUD_WAITS_PER_ADDRESS") {
        self.address = address
        self.places = places
        self.ofTotal = ofTotal
        self.setting = setting
    }
}

/// The places of the box's waiting requests, and how they are shared.
///
/// Each waiting request holds an fcgiwrap process (and its own program) for
/// up to `WireLimits.waitSeconds` seconds, so at most as many wait at once
/// as the deployment has places for (`WaitLimit.places`); within those, one
/// address holds at most its `WaitShare`. A wait past either is refused at
/// once (`WaitError`), never queued behind the others.
package enum Waiting {
    /// Takes a free place (`<root>/.locks/waiting.<n>.lock`, held with
    /// `flock` until closed or the process ends, a kill included) and writes
    /// the client's address into it. With a share, every place is looked at
    /// first: the held ones that name the same address are counted, and at
    /// `share.places` the wait is refused (`WaitError.addressHoldsItsShare`).
    /// Throws `WaitError.tooManyWaiting` when all `places` are held. The
    /// count and the taking are one step: a process does them holding
    /// `<root>/.locks/waiting.lock`, a few dozen system calls. A data
    /// directory this process cannot write counts no places (`.closed`).
    static func takePlace(root: String, places atOnce: Int, share: WaitShare?) throws -> FileDescriptor {
        let data = DataDirectory(root)
        do {
            try data.makeLocks()
        } catch let error as SystemError {
            if error.isNotWritable { return .closed }
            throw StorageError(error, .reading)
        }
        let turnPath = data.waitingTurn
        guard let turn = try openPlace(turnPath) else { return .closed }
        defer { Sys.close(turn) }
        do {
            try Sys.lock(turn, shared: false, path: turnPath)
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
        let address = Array((share?.address ?? "").utf8)
        var free = FileDescriptor.closed
        var taken = false
        defer { if !taken { Sys.close(free) } }
        var heldByAddress = 0
        let first = Int(Sys.processID) % atOnce
        for step in 0..<atOnce {
            let path = data.waitingPlace((first + step) % atOnce)
            guard let fd = try openPlace(path) else { return .closed }
            do {
                // A place found free is this process's until it closes it.
                if try Sys.tryLock(fd, path: path) {
                    if free == .closed {
                        free = fd
                        if share == nil { break }
                        continue
                    }
                } else if share != nil, try Sys.read(fd, count: address.count + 1, at: 0, path: path) == address {
                    heldByAddress += 1
                }
            } catch let error as SystemError {
                Sys.close(fd)
                throw StorageError(error, .reading)
            }
            Sys.close(fd)
        }
        if let share, heldByAddress >= share.places { throw WaitError.addressHoldsItsShare(share) }
        if free == .closed { throw WaitError.tooManyWaiting(limit: atOnce) }
        do {
            // Whose place it is, for the next process's count ("": no share).
            try Sys.truncate(free, to: 0, path: "waiting place")
            try Sys.write(free, address, at: 0, path: "waiting place")
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
        taken = true
        return free
    }

    /// Opens (creating) one of the places or the turn's lock file; `nil`
    /// when the data directory cannot be written.
    private static func openPlace(_ path: String) throws -> FileDescriptor? {
        do {
            return try Sys.open(path, .readWrite | .create | .noFollow, mode: 0o600)
        } catch let error as SystemError {
            if error.isNotWritable { return nil }
            throw StorageError(error, .reading)
        }
    }

    /// A failure to set up the watch: out of inotify instances or watches
    /// (another kind of "too many waiting"), or the reading failure it is.
    package static func failure(_ error: SystemError, places atOnce: Int) -> any Error {
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
    /// The client's address already holds its share of the places.
    case addressHoldsItsShare(WaitShare)

    package var description: String {
        switch self {
        case .tooManyWaiting(let limit):
            return "a read asked to wait while \(limit) others wait (or the system's inotify watches ran out)"
        case .addressHoldsItsShare(let share):
            return "a read from \(share.address) asked to wait while \(share.places) others from that address wait, its share"
        }
    }
}
