import MockCloudJSON
import MockCloudWire

/// The limits of `POST /inbox:bulk` (docs/API.md §8): `upload` cuts its
/// requests to fit them, and refuses an item larger than the server takes
/// without sending it.
public struct BulkLimits: Sendable {
    public var maxItems: Int
    public var maxRequestBytes: Int
    public var maxItemBodyBytes: Int

    /// The server's: 1,000 items, 8 MiB a request, 256 KiB a body.
    public static let server = BulkLimits(
        maxItems: WireLimits.bulkItems, maxRequestBytes: WireLimits.bulkBodyBytes,
        maxItemBodyBytes: WireLimits.messageBodyBytes)

    public init(maxItems: Int, maxRequestBytes: Int, maxItemBodyBytes: Int) {
        self.maxItems = maxItems
        self.maxRequestBytes = maxRequestBytes
        self.maxItemBodyBytes = maxItemBodyBytes
    }
}

/// Who the client is and how patient it is.
public struct ClientConfiguration: Sendable {
    public var userKey: UserKey
    /// Sent as `X-Device-Id` on writes (the messages' `source`) and as
    /// `exclude-source` on incremental feed reads.
    public var deviceID: DeviceID?
    /// `Authorization: Bearer` when the box has tokens on.
    public var token: String?
    public var retry: RetryPolicy
    public var limits: BulkLimits
    /// Bulk requests `upload` keeps in flight: with 2, the next request
    /// crosses the link while the server stores the one before.
    public var uploadsInFlight: Int
    /// How long each waiting request of a follow (`changes(since:follow:)`,
    /// `settingsUpdates(after:)`) asks the box to hold it for a change, in
    /// whole seconds from 1 to 60 (the box's limit). Shorter costs more
    /// requests; longer keeps the box's program waiting longer after the
    /// client gave up.
    public var wait: Duration
    /// How the client waits between attempts: the continuous clock, or one
    /// a test injects (package access: not an app's API). Its sleep throws
    /// `CancellationError` when the task is cancelled, which ends the retries.
    package var clock: any Clock<Duration> = ContinuousClock()

    public init(
        userKey: UserKey, deviceID: DeviceID? = nil, token: String? = nil, retry: RetryPolicy = .standard,
        limits: BulkLimits = .server, uploadsInFlight: Int = 2, wait: Duration = .seconds(30)
    ) {
        self.userKey = userKey
        self.deviceID = deviceID
        self.token = token
        self.retry = retry
        self.limits = limits
        self.uploadsInFlight = max(1, uploadsInFlight)
        let seconds = Int(wait.components.seconds)
        self.wait = .seconds(min(max(seconds, WireLimits.waitSeconds.lowerBound), WireLimits.waitSeconds.upperBound))
    }

    /// `wait` as the `?wait=` query parameter's whole seconds.
    var waitSeconds: Int { Int(wait.components.seconds) }

    /// Sleeps `duration` on `clock`; throws `CancellationError` when the task is cancelled.
    package func sleep(for duration: Duration) async throws { try await Self.sleep(clock, for: duration) }

    /// `clock`, opened (`Clock.sleep(for:)` is missing from iOS 16's standard library).
    private static func sleep<C: Clock>(_ clock: C, for duration: Duration) async throws where C.Duration == Duration {
        try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
    }
}

/// The sync client for one user key on one box: uploads in bulk, the change
/// feed with 410 recovery, and settings with conditions. docs/SYNC.md shows
/// it in use; docs/API.md is the contract it follows.
public struct BoxClient: Sendable {
    public let configuration: ClientConfiguration
    let transport: any HTTPTransport

    public init(configuration: ClientConfiguration, transport: any HTTPTransport) {
        self.configuration = configuration
        self.transport = transport
    }

    /// Whether a request may be sent again when its answer was lost (a broken
    /// connection, a 5xx that says `"changed": "maybe"` or `"yes"`, or none):
    /// `safe` for reads and for writes that converge when repeated;
    /// `onlyIfNotDone` for conditional writes, whose first attempt may have
    /// changed the tag they name. A 429, or a 5xx that says `"changed": "no"`
    /// (nothing was done), is always sent again, after the `Retry-After` the
    /// server asked for.
    enum Repeat { case safe, onlyIfNotDone }

    /// How an exchange ended: an answer to act on, or (`onlyIfNotDone` only)
    /// none that says whether the write was applied, for the caller to
    /// settle by reading back.
    enum Exchange {
        case answered(TransportResponse)
        case unsettled(String)
    }

    /// Sends `request` with the user's headers, retrying by the policy; an
    /// unsettled write is `unavailable`.
    func exchange(_ request: TransportRequest, _ retry: Repeat) async throws -> TransportResponse {
        switch try await attempt(request, retry) {
        case .answered(let response): return response
        case .unsettled(let detail): throw ClientError.unavailable(detail)
        }
    }

    /// Sends `request` with the user's headers, retrying by the policy.
    /// Cancelling the task stops the request in flight and every retry
    /// (`CancellationError`).
    func attempt(_ request: TransportRequest, _ retry: Repeat) async throws -> Exchange {
        var request = request
        request.headers.append((HTTPHeader.userKey.name, configuration.userKey.rawValue))
        if let device = configuration.deviceID { request.headers.append((HTTPHeader.deviceID.name, device.rawValue)) }
        if let token = configuration.token { request.headers.append((HTTPHeader.authorization.name, "Bearer " + token)) }
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            try Task.checkCancellation()
            let last = attempt >= policy.maxAttempts
            let attempts = "\(attempt) attempt\(attempt == 1 ? "" : "s")"
            let response: TransportResponse
            do {
                response = try await transport.send(request)
            } catch {
                try Task.checkCancellation()
                if error is CancellationError { throw error }
                guard let failure = error as? TransportError else { throw ClientError.local("the transport failed: \(error)") }
                switch failure.code {
                case .untrusted: throw ClientError.untrusted(failure.detail)
                case .connection:
                    guard retry == .safe else { return .unsettled("\(failure.detail): no answer, the write may have been applied") }
                    guard !last else { throw ClientError.unavailable("\(failure.detail) (\(attempts))") }
                    try await pause(policy.delay(afterAttempt: attempt, retryAfter: nil))
                    continue
                default: throw ClientError.local(failure.detail)
                }
            }
            switch Self.outcome(of: response) {
            case .final:
                return .answered(response)
            case .notDone:
                break
            case .maybeDone:
                guard retry == .safe else {
                    return .unsettled("\(response.status) \(Self.errorText(response)): the write may have been applied")
                }
            }
            guard !last else {
                throw ClientError.unavailable("\(response.status) \(Self.errorText(response)) (\(attempts))", lastStatus: response.status)
            }
            try await pause(policy.delay(afterAttempt: attempt, retryAfter: response.header(HTTPHeader.retryAfter.name)))
        }
    }

    /// What an answer says of the request: `final` to act on, `notDone` (429,
    /// or a 5xx that says nothing changed) to send again, `maybeDone` (a 5xx
    /// that says the data changed or may have, or says nothing of it).
    enum Outcome { case final, notDone, maybeDone }

    static func outcome(of response: TransportResponse) -> Outcome {
        switch response.status {
        case 429: return .notDone
        case 500, 502, 503, 504:
            switch (try? object(response))?["changed"]?.stringValue.flatMap(DataChange.init(rawValue:)) {
            case .no?: return .notDone
            case .yes?, .maybe?: return .maybeDone
            // No word: a 503 refuses before any work (the box is busy); a 500,
            // 502 or 504 may have come after the program wrote.
            case nil: return response.status == 503 ? .notDone : .maybeDone
            }
        default: return .final
        }
    }

    /// The wait before the next attempt; a cancelled task stops here
    /// (`CancellationError`, whatever the sleep threw).
    func pause(_ duration: Duration) async throws {
        do {
            try await configuration.sleep(for: duration)
        } catch {
            throw CancellationError()
        }
        try Task.checkCancellation()
    }

    /// `request`'s answer, with a box that stays unavailable through every
    /// retry (a long restart, the Wi-Fi gone) waited out, however long it
    /// lasts: a follow keeps following. Its request went through every
    /// retry, so each wait is the policy's longest (jittered). Cancellation
    /// ends it (`CancellationError`).
    func waitingOutUnavailable<T>(_ request: () async throws -> T) async throws -> T {
        var backoff = Backoff(initial: configuration.retry.maxDelay, cap: configuration.retry.maxDelay)
        while true {
            do {
                return try await request()
            } catch ClientError.Code.unavailable {
                try await pause(backoff.failed())
            }
        }
    }

    /// The answer's JSON object.
    static func object(_ response: TransportResponse) throws -> JSONObject {
        guard let value = try? JSONParser.parse(response.body, maxDepth: JSONParser.storedDocumentMaxDepth),
            let object = value.objectValue
        else { throw ClientError.badAnswer("status \(response.status) with a body that is not a JSON object") }
        return object
    }

    /// The `error` sentence of an error answer, or its status alone.
    static func errorText(_ response: TransportResponse) -> String {
        (try? object(response))?["error"]?.stringValue ?? "no error text"
    }

    /// `.refused` for an answer the caller did not expect.
    static func refusal(_ response: TransportResponse) -> ClientError {
        .refused(status: response.status, error: errorText(response))
    }
}
