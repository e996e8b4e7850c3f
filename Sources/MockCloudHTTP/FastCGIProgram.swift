import MockCloudConfig
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// The same program as a pool of persistent FastCGI responders, as
/// php-fpm's static pool serves nginx: a master forks `workers` processes
/// that take connections from one listening socket, each one request at a
/// time, single-threaded. The master restarts a worker that ends (and logs
/// the signal that ended it), never giving up; on SIGTERM or SIGINT it
/// passes the signal on, each worker finishes the request it is serving,
/// and the master exits once they have.
///
/// Nothing of one request reaches the next: each gets its environment from
/// its own PARAMS, a fresh `WriteProgress`, `LastWords` pointed at its own
/// connection, the inbox's upkeep flags cleared and the time limit set
/// anew. A time-out or a crash answers as the CGI program does, over the
/// request's connection, and ends that worker only; the master starts
/// another. Upkeep after an answer runs in a child of the worker, so that
/// the worker takes its next request at once (the inbox folder's lock
/// still runs one upkeep at a time).
package enum FastCGIProgram {
    /// How the pool was asked for.
    package struct Options: Sendable, Equatable {
        /// `unix:PATH` to listen on; `nil`: the socket systemd passed.
        package var socketPath: String?
        /// Workers to keep running.
        package var workers = Capacity.fastCGIWorkers
        /// Requests a worker serves before it is replaced (0: no limit).
        package var maxRequests = 0
        /// `--waits N`: instead of workers, one event loop that holds up to
        /// this many reads that wait for a change (`WaitLoop`).
        package var waits: Int?
        /// `--waits-per-address N`: the loop's waits one client address may hold.
        package var waitsPerAddress = Capacity.loopWaitsPerAddress

        package init(socketPath: String? = nil, workers: Int = Capacity.fastCGIWorkers, maxRequests: Int = 0,
                     waits: Int? = nil, waitsPerAddress: Int = Capacity.loopWaitsPerAddress) {
            self.socketPath = socketPath
            self.workers = workers
            self.maxRequests = maxRequests
            self.waits = waits
            self.waitsPerAddress = waitsPerAddress
        }

        /// The options when the process was started as a FastCGI server:
        /// with arguments (`--fastcgi unix:PATH`, `--workers N`,
        /// `--max-requests N`) or by systemd with a socket; `nil` for a CGI
        /// request (fcgiwrap passes no argument). A wrong argument ends the
        /// process with a line saying which.
        package static func fromProcess(name: String) -> Options? {
            if CommandLine.argc > 1 {
                do {
                    return try parse(Array(CommandLine.arguments.dropFirst()))
                } catch {
                    CGIProgram.log(name, "\(error)")
                    Sys.exit(2)
                }
            }
            return Sys.environmentValue("LISTEN_FDS") == nil ? nil : Options()
        }

        /// Reads the arguments: `--fastcgi unix:PATH` (or `--fastcgi
        /// systemd`), `--workers N` (1 to 256), `--max-requests N`.
        package static func parse(_ arguments: [String]) throws -> Options {
            var options = Options()
            var named = false
            var rest = arguments[...]
            while let argument = rest.popFirst() {
                guard let value = rest.popFirst() else { throw ConfigError("\(argument) needs a value") }
                switch argument {
                case "--fastcgi":
                    named = true
                    if value == "systemd" {
                        options.socketPath = nil
                    } else if value.hasPrefix("unix:"), value.count > 5 {
                        options.socketPath = String(value.dropFirst(5))
                    } else {
                        throw ConfigError("--fastcgi \(value): give unix:PATH, or systemd for the socket systemd passes")
                    }
                case "--workers":
                    guard let count = Int(value), (1...256).contains(count) else {
                        throw ConfigError("--workers \(value) is not a whole number from 1 to 256")
                    }
                    options.workers = count
                case "--max-requests":
                    guard let count = Int(value), count >= 0 else {
                        throw ConfigError("--max-requests \(value) is not a whole number (0: no limit)")
                    }
                    options.maxRequests = count
                case "--waits":
                    guard let count = Int(value), Capacity.loopWaitsRange.contains(count) else {
                        throw ConfigError("--waits \(value) is not a whole number from \(Capacity.loopWaitsRange.lowerBound) "
                            + "to \(Capacity.loopWaitsRange.upperBound)")
                    }
                    options.waits = count
                case "--waits-per-address":
                    guard let count = Int(value), Capacity.loopWaitsRange.contains(count) else {
                        throw ConfigError("--waits-per-address \(value) is not a whole number from "
                            + "\(Capacity.loopWaitsRange.lowerBound) to \(Capacity.loopWaitsRange.upperBound)")
                    }
                    options.waitsPerAddress = count
                default:
                    throw ConfigError("unknown argument \(argument): a CGI program takes none; FastCGI takes "
                        + "--fastcgi unix:PATH|systemd, --workers N, --max-requests N, --waits N, --waits-per-address N")
                }
            }
            guard named else {
                throw ConfigError("--workers, --max-requests and --waits need --fastcgi unix:PATH or --fastcgi systemd")
            }
            if let waits = options.waits {
                // One loop holds them all; its share cannot pass its whole.
                options.workers = 1
                options.waitsPerAddress = min(options.waitsPerAddress, waits)
            }
            return options
        }
    }

    /// The connection of the request in progress, for its log lines and its wait.
    nonisolated(unsafe) static var connection = FileDescriptor.closed
    nonisolated(unsafe) static var requestID: UInt16 = 0
    /// Set by SIGTERM or SIGINT in the master.
    nonisolated(unsafe) private static var stopping = false

    /// Sends a log line on the request's STDERR; false when no request is
    /// in progress (the line goes to the process's stderr instead).
    static func logLine(_ text: [UInt8]) -> Bool {
        guard connection != .closed else { return false }
        var out: [UInt8] = []
        FastCGI.appendStream(.stderr, requestID, text, to: &out)
        try? Sys.writeAll(connection, out, path: "FastCGI connection")
        return true
    }

    /// The ways to whoever takes the answer of a waiting request: the
    /// request's FastCGI connection, which nginx closes when the client
    /// goes away; `nil` outside a FastCGI request.
    static var answerPaths: [FileDescriptor]? { connection == .closed ? nil : [connection] }

    /// Listens, forks the workers and keeps them running until stopped.
    static func run(
        _ options: Options, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Never {
        let listening: FileDescriptor
        do {
            if let path = options.socketPath {
                listening = try Sys.listen(unixPath: path)
            } else if let passed = Sys.socketFromSystemd() {
                listening = passed
            } else {
                throw ConfigError("--fastcgi systemd, but systemd passed no socket (LISTEN_FDS, LISTEN_PID)")
            }
        } catch {
            CGIProgram.log(name, "cannot listen: \(error)")
            Sys.exit(1)
        }
        Sys.unblockAllSignals()
        Sys.holdMasterSignals(onStop: { _ in FastCGIProgram.stopping = true })
        var workers: [Int32: Int64] = [:]    // pid -> when it started (monotonic ns)
        // Workers that failed on their own (a crash, an exit with an error;
        // not SIGKILL or SIGTERM from outside, not a request's crash that
        // LastWords answered) within a second of their start, in a row, and
        // the time before which no other starts: a worker that cannot start
        // (a broken setup) is started again later each time, 0.1 s doubling
        // to 10 s, not in a loop that fills the log.
        var quickEnds = 0
        var notBefore: Int64 = 0
        func start() {
            do {
                let pid = try Sys.fork()
                if pid == 0 {
                    if let waits = options.waits {
                        Sys.resetForWorker()
                        LastWords.endRequest()
                        WaitLoop.run(listening, capacity: waits, perAddress: options.waitsPerAddress, name: name,
                                     bodyLimit: bodyLimit, handler)
                    }
                    work(listening, options, name: name, bodyLimit: bodyLimit, handler)
                }
                workers[pid] = Sys.monotonicNanos()
            } catch {
                CGIProgram.log(name, "cannot start a worker (trying again in a second): \(error)")
                Sys.sleep(milliseconds: 1000)
            }
        }
        if let waits = options.waits {
            CGIProgram.log(name, "FastCGI: one event loop for up to \(waits) waits (\(options.waitsPerAddress) per address) on "
                + (options.socketPath.map { "unix:" + $0 } ?? "systemd's socket"))
        } else {
            CGIProgram.log(name, "FastCGI: \(options.workers) workers on \(options.socketPath.map { "unix:" + $0 } ?? "systemd's socket")")
        }
        while !stopping {
            let wait = notBefore - Sys.monotonicNanos()
            if wait <= 0 {
                while workers.count < options.workers && !stopping { start() }
            }
            let short = workers.count < options.workers && wait > 0
            guard case .child(let pid, let end) = Sys.awaitChildOrSignal(milliseconds: short ? Int((wait + 999_999) / 1_000_000) : nil),
                let began = workers.removeValue(forKey: pid)
            else { continue }
            let how: String
            var failed = true
            switch end {
            case .signaled(let signal):
                how = "ended by \(Sys.signalName(signal))"
                failed = signal != Sys.kill && signal != Sys.terminate
            case .exited(let status) where status > 128 && status <= 128 + 64:
                // LastWords answered its request, then ended it as the signal would have.
                how = "ended by \(Sys.signalName(status - 128)) (its request answered)"
                failed = false
            case .exited(let status) where status != 0: how = "exited with status \(status)"
            case .exited:    // recycled after --max-requests
                quickEnds = 0
                continue
            }
            let now = Sys.monotonicNanos()
            guard failed, now - began < 1_000_000_000 else {
                quickEnds = 0
                CGIProgram.log(name, "worker \(pid) \(how); starting another")
                continue
            }
            quickEnds += 1
            let delay = min(100 << min(quickEnds - 1, 7), 10_000)
            notBefore = now + Int64(delay) * 1_000_000
            CGIProgram.log(name, "worker \(pid) \(how) within a second of its start, \(quickEnds) in a row; "
                + "starting another in \(delay / 1000).\(delay % 1000 / 100) s")
        }
        for pid in workers.keys { Sys.send(Sys.terminate, to: pid) }
        while !workers.isEmpty {
            switch Sys.awaitChildOrSignal() {
            case .child(let pid, _): workers.removeValue(forKey: pid)
            case .signal, .timedOut: continue
            case .noChildren: workers.removeAll()
            }
        }
        if let path = options.socketPath { _ = try? Sys.unlink(path) }
        Sys.exit(0)
    }

    /// A worker: connections, one at a time, until `maxRequests` are served
    /// or SIGTERM comes between two requests.
    private static func work(
        _ listening: FileDescriptor, _ options: Options, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Never {
        Sys.resetForWorker()
        LastWords.endRequest()    // idle: a signal has nobody to answer
        var served = 0
        while options.maxRequests == 0 || served < options.maxRequests {
            Sys.holdTermination(false)
            let accepted: FileDescriptor
            do {
                accepted = try Sys.accept(listening)
            } catch {
                CGIProgram.log(name, "accept: \(error)")
                Sys.sleep(milliseconds: 100)
                continue
            }
            Sys.holdTermination(true)
            served += serve(connection: accepted, listening: listening, name: name, bodyLimit: bodyLimit,
                            left: options.maxRequests == 0 ? Int.max : options.maxRequests - served, handler)
            Sys.close(accepted)
        }
        Sys.exit(0)
    }

    /// Serves the requests of one connection (at most `left`); how many.
    package static func serve(
        connection accepted: FileDescriptor, listening: FileDescriptor, name: String, bodyLimit: Int, left: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Int {
        var reader = FastCGIRecordReader()
        var state = FastCGIConnectionState(bodyLimit: bodyLimit)
        var served = 0
        var kept = false
        do {
            while true {
                while let record = try reader.next() {
                    switch try state.take(record) {
                    case .none: break
                    case .began: Sys.setAlarm(seconds: CGIProgram.timeLimitSeconds)
                    case .reply(let bytes): try Sys.writeAll(accepted, bytes, path: "FastCGI connection")
                    case .aborted(let bytes):
                        Sys.setAlarm(seconds: 0)
                        try Sys.writeAll(accepted, bytes, path: "FastCGI connection")
                    case .request(let request):
                        let written = answer(request, on: accepted, listening: listening, name: name, bodyLimit: bodyLimit, handler)
                        served += 1
                        guard written, request.keepConnection, served < left else { return served }
                        kept = true
                    }
                }
                // Between two requests of a kept connection, a stop may end the worker.
                let idle = kept && state.isIdle && reader.isEmpty
                if idle { Sys.holdTermination(false) }
                let bytes = try Sys.readSome(accepted, count: 65536, path: "FastCGI connection")
                if idle { Sys.holdTermination(true) }
                if bytes.isEmpty { break }
                reader.append(bytes)
            }
        } catch {
            // A broken protocol or connection: closed, with no answer to give.
            CGIProgram.log(name, "FastCGI connection closed: \(error)")
        }
        Sys.setAlarm(seconds: 0)
        return served
    }

    /// Answers one request on `accepted`; false when the answer could not be
    /// written (the connection is then closed; the log says so).
    private static func answer(
        _ request: FastCGIRequest, on accepted: FileDescriptor, listening: FileDescriptor, name: String, bodyLimit: Int,
        _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Bool {
        WriteProgress.reset()
        InboxStore.forgetUpkeepDue()
        connection = accepted
        requestID = request.requestID
        LastWords.beginRequest(connection: accepted, id: request.requestID)
        let environment = FastCGI.environment(request.params)
        var upkeep = Upkeep.none
        let response = CGIProgram.respond(
            environment: environment, bodyLimit: bodyLimit, body: .received(request.body, length: request.bodyLength),
            name: name
        ) { request in try handler(request, &upkeep) }
        Sys.setAlarm(seconds: 0)
        let bytes = FastCGI.answer(request.requestID, CGIProgram.serialized(response, environment))
        LastWords.answerBegins()
        var written = true
        do {
            try Sys.writeAll(accepted, bytes, path: "FastCGI connection")
        } catch {
            connection = .closed
            CGIProgram.log(name, "could not write the response: \(error)")
            written = false
        }
        connection = .closed
        LastWords.endRequest()
        if upkeep.isNeeded { upkeepInChild(name, upkeep, accepted, listening) }
        return written
    }

    /// The upkeep in a child of the worker (reaped by the system): the
    /// worker goes on to its next request. Without a child, it runs here.
    static func upkeepInChild(_ name: String, _ upkeep: Upkeep, _ accepted: FileDescriptor, _ listening: FileDescriptor) {
        let pid: Int32
        do {
            pid = try Sys.fork()
        } catch {
            CGIProgram.log(name, "no child for the upkeep (run in the worker): \(error)")
            CGIProgram.runAfterAnswer(name, upkeep, detach: false)
            Sys.setAlarm(seconds: 0)
            return
        }
        guard pid == 0 else { return }
        Sys.close(accepted)
        Sys.close(listening)
        CGIProgram.runAfterAnswer(name, upkeep, detach: true)
        Sys.exit(0)
    }
}
