import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// The run loop of every CGI program: environment and stdin in, one response
/// out. `main.swift` calls `serve` and nothing else.
package enum CGIProgram {
    /// Seconds a request's work may take before the program answers 503 and
    /// exits. fcgiwrap has no time limit of its own; a request that waits
    /// for a change (`?wait=`) gets its wait on top (`allowWait`), and nginx
    /// waits for an answer for longer than both (`fastcgi_read_timeout` in
    /// nginx/mockcloud-locations.conf, checked by `WaitingConfigurationTests`).
    package static let timeLimitSeconds: UInt32 = 25

    /// Moves the time limit out by a wait of `seconds`, from now: the wait,
    /// then `timeLimitSeconds` for the work.
    package static func allowWait(seconds: Int) {
        Sys.setAlarm(seconds: timeLimitSeconds + UInt32(seconds))
    }

    /// Seconds the upkeep after an answer may take (compacting an inbox of
    /// 100,000 messages reads each once).
    static let upkeepTimeLimitSeconds: UInt32 = 120

    /// Reads the request, calls `handler`, writes its answer and exits.
    /// - Parameters:
    ///   - name: the program's name, for lines on stderr.
    ///   - bodyLimit: the route's largest accepted body, in bytes.
    ///   - handler: answers the request; it may leave upkeep in `afterAnswer`.
    package static func serve(
        name: String, bodyLimit: Int, _ handler: (CGIRequest, _ afterAnswer: inout Upkeep) throws -> CGIResponse
    ) -> Never {
        KeepUntilExit.turnOn()
        Sys.ignoreBrokenPipes()
        // A time-out, a trap (a Swift runtime check) or a fault still answers
        // in JSON, and says whether the change had begun, instead of leaving
        // fcgiwrap a bare 502; a crash also says so in the server log.
        LastWords.install(
            timeOut: (unchanged: """
                Status: 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n\
                {"error": "request took too long (storage busy); nothing was written, try again", "changed": "no"}
                """,
                maybe: """
                Status: 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n\
                {"error": "request took too long (storage busy) while the change was being made: it may or may \
                not have been made. Retrying the same request is safe", "changed": "maybe"}
                """),
            crash: (unchanged: """
                Status: 500 Internal Server Error\r\nContent-Type: application/json\r\n\r\n\
                {"error": "internal error; see the server log", "changed": "no"}
                """,
                maybe: """
                Status: 500 Internal Server Error\r\nContent-Type: application/json\r\n\r\n\
                {"error": "internal error while the change was being made: it may or may not have been made; \
                see the server log. Retrying the same request is safe", "changed": "maybe"}
                """),
            crashLog: "mockcloud: the program crashed (fatal signal); answered 500\n")
        Sys.setAlarm(seconds: timeLimitSeconds)
        let environment = Environment.process
        var upkeep = Upkeep.none
        let response = respond(environment: environment, bodyLimit: bodyLimit, stdin: .standardInput, name: name) {
            request in try handler(request, &upkeep)
        }
        Sys.setAlarm(seconds: 0)
        // A HEAD answer carries GET's headers, Content-Length included, and no body.
        let bytes = response.serialized(includingBody: HTTPMethod(environment["REQUEST_METHOD"] ?? "GET") != .head)
        LastWords.answerBegins()
        do {
            try Sys.writeAll(.standardOutput, bytes, path: "stdout")
        } catch {
            log(name, "could not write the response: \(error)")
            Sys.exit(1)
        }
        if upkeep.isNeeded { runAfterAnswer(name, upkeep) }
        Sys.exit(0)
    }

    /// The route's upkeep, once the client has its answer: fcgiwrap ends a
    /// request when the program's stdout and stderr are both closed, so both
    /// go first (stderr to /dev/null) and a failure is told to syslog
    /// instead, the daemon facility, as `mockcloud-<name>`.
    private static func runAfterAnswer(_ name: String, _ upkeep: Upkeep) {
        Sys.detachOutput()
        Sys.setAlarm(seconds: upkeepTimeLimitSeconds)
        do {
            try upkeep.run()
        } catch {
            Sys.logToSystem(ident: "mockcloud-" + name, "upkeep after a write failed (the next write tries again): \(error)")
        }
    }

    /// Answers one request: `serve` for a route that leaves no upkeep.
    package static func serve(name: String, bodyLimit: Int, _ handler: (CGIRequest) throws -> CGIResponse) -> Never {
        serve(name: name, bodyLimit: bodyLimit) { request, _ in try handler(request) }
    }

    /// Everything `serve` does except the process plumbing, so that it can be
    /// tested with any environment and any file descriptor as stdin.
    package static func respond(
        environment: Environment, bodyLimit: Int, stdin: FileDescriptor, name: String,
        _ handler: (CGIRequest) throws -> CGIResponse
    ) -> CGIResponse {
        do {
            let body = try readBody(environment: environment, limit: bodyLimit, from: stdin)
            try checkHeaders(environment)
            return try handler(CGIRequest(environment: environment, body: body))
        } catch let error as any HTTPResponseError {
            if let detail = error.logDetail { log(name, detail) }
            return .error(error, changed: changed(error.status, error.dataChange, environment))
        } catch {
            log(name, "unexpected error: \(error)")
            let error = ServerError(message: "internal error; see the server log")
            return .error(error, changed: changed(error.status, nil, environment))
        }
    }

    /// The `changed` member of an error answer: only a write's 5xx carries
    /// one (a 4xx changed nothing); what the error knows, or else whether
    /// this process had begun to put a change in place.
    static func changed(_ status: HTTPStatus, _ known: DataChange?, _ environment: Environment) -> DataChange? {
        guard status.code >= 500 else { return nil }
        switch HTTPMethod(environment["REQUEST_METHOD"] ?? "GET") {
        case .get, .head, .other: return nil
        case .put, .patch, .delete, .post: return known ?? (WriteProgress.mayHaveChanged ? .maybe : .no)
        }
    }

    /// Refuses (400) an identity header sent more than once, whichever line
    /// would win: nginx 1.22 passes each line (the environment holds the name
    /// twice), later nginx joins them with ", ", and no user key, device id
    /// or token holds a comma. Refuses (415) a request body in any
    /// `Content-Encoding` but identity: the routes read JSON as sent.
    static func checkHeaders(_ environment: Environment) throws(RequestError) {
        try once(environment, HTTPHeader.userKey)
        try once(environment, HTTPHeader.deviceID)
        try once(environment, HTTPHeader.authorization)
        if let encoding = environment[HTTPHeader.contentEncoding.variable] {
            let value = Substring(encoding).trimmingHeaderSpace()
            if !value.isEmpty && value.lowercased() != "identity" { throw .unsupportedContentEncoding(value) }
        }
    }

    /// Throws `.repeatedHeader` when `header` came more than once.
    private static func once(_ environment: Environment, _ header: HTTPHeader) throws(RequestError) {
        let variable = header.variable
        if environment.isRepeated(variable) || environment[variable]?.utf8.contains(UInt8(ascii: ",")) == true {
            throw .repeatedHeader(header.name)
        }
    }

    /// Reads exactly `CONTENT_LENGTH` bytes. The whole body is always read,
    /// even when it is refused: fcgiwrap writes all of stdin first, and a
    /// program that exits early turns its own 4xx into a 502.
    static func readBody(environment: Environment, limit: Int, from fd: FileDescriptor) throws -> [UInt8] {
        let declared = environment["CONTENT_LENGTH"] ?? ""
        if declared.isEmpty { return [] }
        guard declared.utf8.allSatisfy(ASCII.isDigit) else {
            try drain(fd, upTo: Int.max)
            throw RequestError.invalidContentLength(declared)
        }
        // All digits but past Int: certainly over the limit.
        let length = Int(declared) ?? Int.max
        if length > limit {
            try drain(fd, upTo: length)
            throw RequestError.bodyTooLarge(limit: limit)
        }
        let body = try Sys.readAll(fd, path: "stdin", limit: length)
        if body.count < length {
            throw RequestError.bodyShorterThanContentLength(expected: length, received: body.count)
        }
        return body
    }

    /// Reads and discards up to `count` bytes (or to end of file), so that
    /// the server sees its whole body taken before the answer.
    private static func drain(_ fd: FileDescriptor, upTo count: Int) throws {
        var remaining = count
        while remaining > 0 {
            let chunk = try Sys.readAll(fd, path: "stdin", limit: min(remaining, 1 << 20))
            if chunk.isEmpty { return }
            remaining -= chunk.count
        }
    }

    /// One line on stderr, which fcgiwrap `-f` hands to nginx's error log.
    package static func log(_ name: String, _ line: String) {
        let text = Array("mockcloud \(name): \(line)\n".utf8)
        try? Sys.writeAll(.standardError, text, path: "stderr")
    }
}
