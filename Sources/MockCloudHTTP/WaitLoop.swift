import MockCloudConfig
import MockCloudStore
import MockCloudSystem

/// The FastCGI mode's process for reads that wait for a change (`?wait=`,
/// which nginx sends to `<program>-waits.sock`): one single-threaded event
/// loop per program that holds thousands of waits at the cost of a
/// connection each. It accepts nginx's connections without blocking, reads
/// their records with the same `FastCGIRecordReader` and
/// `FastCGIConnectionState` as a worker, and runs each request with the
/// route code a worker runs, through `CGIProgram.respond`. When the route
/// comes to wait (`WaitLimit.waitForChange`), the wait is held here
/// (`WaitLimit.Holder.holding`): its file is followed on the loop's one
/// inotify instance (`ChangeWatch`), its place counted in memory, and the
/// request is set aside. A change on the way to its file runs the request
/// again (a spurious one costs a look, as in a worker); its deadline runs it
/// a last time, whose answer, whatever it is, is an ordinary read. No lock
/// is held between two looks. nginx closing the connection (the client
/// left) or ABORT_REQUEST frees the place at once.
///
/// One loop per program: each program's binary holds its own route code.
/// The master of `FastCGIProgram.run` restarts a loop that dies; its
/// clients' connections break (nginx answers them 502) and their follows
/// ask again on the socket, which lives on in the master.
enum WaitLoop {
    /// One connection from nginx.
    private struct Connection {
        var reader = FastCGIRecordReader()
        var state: FastCGIConnectionState
        /// The request set aside until its file changes or its time is up.
        var request: FastCGIRequest?
        /// Its place: the address it counts against (`""`: not counted).
        var place: String?
        var deadline: Int64 = 0
        var followed: ChangeWatch.Followed?
        /// Answer bytes the socket has not taken yet.
        var out: [UInt8] = []
        var closeWhenWritten = false
    }

    nonisolated(unsafe) private static var connections: [FileDescriptor: Connection] = [:]
    nonisolated(unsafe) private static var watch: ChangeWatch?
    /// Who waits on what the watch follows.
    nonisolated(unsafe) private static var waiters: [ChangeWatch.Followed: Set<FileDescriptor>] = [:]
    nonisolated(unsafe) private static var heldByAddress: [String: Int] = [:]
    nonisolated(unsafe) private static var held = 0
    nonisolated(unsafe) private static var capacity = Capacity.loopWaits
    nonisolated(unsafe) private static var perAddress = Capacity.loopWaitsPerAddress
    /// The request being run: its connection, and what its wait followed.
    nonisolated(unsafe) private static var running = FileDescriptor.closed
    nonisolated(unsafe) private static var runningFollowed: ChangeWatch.Followed?
    /// Set while a request runs in the loop: how its wait is held.
    nonisolated(unsafe) static var holder: WaitLimit.Holder?

    /// The waits held now (for tests and the log).
    static var heldCount: Int { held }

    /// Runs the loop on `listening` until the process is ended.
    static func run(
        _ listening: FileDescriptor, capacity: Int, perAddress: Int, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Never {
        self.capacity = capacity
        self.perAddress = perAddress
        // Each wait: nginx's connection; and room for the stores' files.
        let limit = Sys.raiseFileLimit(to: capacity + 256)
        if limit < capacity + 64 {
            CGIProgram.log(name, "the file limit is \(limit): fewer than \(capacity) waits fit (raise LimitNOFILE / ulimit -n)")
        }
        do {
            try Sys.setNonBlocking(listening)
            watch = try ChangeWatch()
        } catch {
            CGIProgram.log(name, "cannot start the loop for waits: \(error)")
            Sys.exit(1)
        }
        while true {
            do {
                try turn(listening, name: name, bodyLimit: bodyLimit, handler)
            } catch {
                CGIProgram.log(name, "loop for waits: \(error)")
                Sys.sleep(milliseconds: 100)
            }
        }
    }

    /// One sleep and what it woke for.
    private static func turn(
        _ listening: FileDescriptor, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) throws {
        let inotify = watch!.descriptor
        var entries = [Sys.Readiness(listening), Sys.Readiness(inotify)]
        entries.reserveCapacity(connections.count + 2)
        var nextDeadline = Int64.max
        for (fd, connection) in connections {
            entries.append(Sys.Readiness(fd, wantsWrite: !connection.out.isEmpty))
            if connection.request != nil { nextDeadline = min(nextDeadline, connection.deadline) }
        }
        var milliseconds: Int32 = -1
        if nextDeadline != .max {
            // Whole milliseconds, rounded up: never wake before a deadline.
            milliseconds = Int32(clamping: max(0, (nextDeadline - Sys.monotonicNanos() + 999_999) / 1_000_000))
        }
        try Sys.waitForAny(&entries, milliseconds: milliseconds)
        for entry in entries.dropFirst(2) where entry.readable || entry.writable || entry.gone {
            if entry.writable { flush(entry.fd) }
            if entry.readable || entry.gone { receive(entry.fd, name: name, bodyLimit: bodyLimit, handler) }
        }
        if entries[1].readable, let touched = try watch!.changes() {
            var woken: Set<FileDescriptor> = []
            for followed in touched { woken.formUnion(waiters[followed] ?? []) }
            for fd in woken { look(fd, name: name, bodyLimit: bodyLimit, handler) }
        } else if entries[1].readable {
            // Events were lost: every held wait looks again.
            for fd in Array(connections.keys) where connections[fd]?.request != nil {
                look(fd, name: name, bodyLimit: bodyLimit, handler)
            }
        }
        let now = Sys.monotonicNanos()
        for (fd, connection) in connections where connection.request != nil && connection.deadline <= now {
            look(fd, name: name, bodyLimit: bodyLimit, handler)
        }
        if entries[0].readable {
            // Many at once, but not without end: the held ones get their turn.
            for _ in 0..<256 {
                guard let fd = try Sys.acceptIfWaiting(listening) else { break }
                connections[fd] = Connection(state: FastCGIConnectionState(bodyLimit: bodyLimit))
            }
        }
    }

    /// Reads what came on `fd` and acts on its records; the end of the
    /// stream (nginx closed it: the client left) ends the connection and
    /// frees its place.
    private static func receive(
        _ fd: FileDescriptor, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) {
        guard var connection = connections[fd] else { return }
        do {
            guard let bytes = try Sys.readIfReady(fd, count: 65536, path: "FastCGI connection") else { return }
            if bytes.isEmpty {
                close(fd)
                return
            }
            connection.reader.append(bytes)
            while let record = try connection.reader.next() {
                switch try connection.state.take(record) {
                case .none, .began: break
                case .reply(let bytes): connection.out += bytes
                case .aborted(let bytes):
                    release(fd, &connection)
                    connection.out += bytes
                case .request(let request):
                    connection.request = request
                    connection.closeWhenWritten = !request.keepConnection
                    connections[fd] = connection
                    look(fd, name: name, bodyLimit: bodyLimit, handler)
                    guard let after = connections[fd] else { return }
                    connection = after
                }
            }
        } catch {
            CGIProgram.log(name, "FastCGI connection closed: \(error)")
            close(fd)
            return
        }
        connections[fd] = connection
        flush(fd)
    }

    /// Runs the request set aside on `fd`: it is answered, or held again
    /// (following what its route waits on now).
    private static func look(
        _ fd: FileDescriptor, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) {
        guard var connection = connections[fd], let request = connection.request else { return }
        // Its watch stays until the look has followed again (most often the same).
        let before = connection.followed
        if let before { waiters[before]?.remove(fd) }
        connection.followed = nil
        let last = connection.place != nil && connection.deadline <= Sys.monotonicNanos()
        running = fd
        runningFollowed = nil
        holder = last ? .lastLook : .holding(follow: { limit, file, root in try follow(limit, file, root) })
        FastCGIProgram.connection = fd
        FastCGIProgram.requestID = request.requestID
        WriteProgress.reset()
        InboxStore.forgetUpkeepDue()
        let environment = FastCGI.environment(request.params)
        var upkeep = Upkeep.none
        var isHeld = false
        let response = CGIProgram.respond(
            environment: environment, bodyLimit: bodyLimit, body: .received(request.body, length: request.bodyLength),
            name: name
        ) { cgiRequest in
            do {
                return try handler(cgiRequest, &upkeep)
            } catch is WaitHeld {
                isHeld = true
                return CGIResponse(status: .ok)
            }
        }
        FastCGIProgram.connection = .closed
        holder = nil
        running = .closed
        // `follow` may have taken the place just now.
        connection.place = connections[fd]?.place ?? connection.place
        connection.deadline = connections[fd]?.deadline ?? connection.deadline
        if isHeld, let followed = runningFollowed {
            connection.followed = followed
            waiters[followed, default: []].insert(fd)
        }
        for followed in [before, runningFollowed] {
            if let followed, waiters[followed]?.isEmpty ?? true {
                waiters[followed] = nil
                watch!.unfollow(followed)
            }
        }
        if isHeld && connection.followed != nil {
            connections[fd] = connection
            return
        }
        release(fd, &connection)
        connection.out += FastCGI.answer(request.requestID, CGIProgram.serialized(response, environment))
        connections[fd] = connection
        if upkeep.isNeeded { FastCGIProgram.upkeepInChild(name, upkeep, fd, .closed) }
        flush(fd)
    }

    /// The loop's `WaitLimit.Holder.holding`: the request being run takes
    /// its place (or is refused, as a worker would refuse it) and its file
    /// is followed, before the route's look.
    private static func follow(_ limit: WaitLimit, _ file: String, _ root: String) throws {
        guard var connection = connections[running] else { throw WaitError.tooManyWaiting(limit: capacity) }
        if connection.place == nil {
            if held >= capacity { throw WaitError.tooManyWaiting(limit: capacity) }
            let address = limit.share?.address ?? ""
            if !address.isEmpty, heldByAddress[address, default: 0] >= perAddress {
                throw WaitError.addressHoldsItsShare(WaitShare(
                    address: address, places: perAddress, ofTotal: capacity, setting: "MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS"))
            }
            connection.place = address
            connection.deadline = limit.deadline
            held += 1
            if !address.isEmpty { heldByAddress[address, default: 0] += 1 }
            connections[running] = connection
        }
        do {
            runningFollowed = try watch!.follow(file, under: root)
        } catch let error as SystemError {
            throw Waiting.failure(error, places: capacity)
        }
    }

    private static func unfollow(_ fd: FileDescriptor, _ followed: ChangeWatch.Followed) {
        guard var set = waiters[followed] else { return }
        set.remove(fd)
        if set.isEmpty {
            waiters[followed] = nil
            watch!.unfollow(followed)
        } else {
            waiters[followed] = set
        }
    }

    /// Gives up the connection's wait: what it followed, and its place.
    private static func release(_ fd: FileDescriptor, _ connection: inout Connection) {
        if let followed = connection.followed { unfollow(fd, followed) }
        connection.followed = nil
        connection.request = nil
        guard let address = connection.place else { return }
        connection.place = nil
        held -= 1
        if !address.isEmpty {
            let left = heldByAddress[address, default: 1] - 1
            heldByAddress[address] = left > 0 ? left : nil
        }
    }

    /// Writes what the socket takes of the connection's answer; a written
    /// answer ends the connection unless nginx keeps it.
    private static func flush(_ fd: FileDescriptor) {
        guard var connection = connections[fd] else { return }
        do {
            while !connection.out.isEmpty {
                let wrote = try Sys.writeIfReady(fd, connection.out[...], path: "FastCGI connection")
                if wrote == 0 { break }
                connection.out.removeFirst(wrote)
            }
        } catch {
            close(fd)
            return
        }
        connections[fd] = connection
        if connection.out.isEmpty && connection.closeWhenWritten && connection.request == nil && connection.state.isIdle {
            close(fd)
        }
    }

    /// Ends a connection: its wait, if any, is given up and its place freed.
    private static func close(_ fd: FileDescriptor) {
        guard var connection = connections.removeValue(forKey: fd) else { return }
        release(fd, &connection)
        Sys.close(fd)
    }
}
