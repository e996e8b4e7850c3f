import MockCloudJSON

/// The limits of `POST /inbox:bulk` (docs/API.md §8): `upload` cuts its
/// requests to fit them, and refuses an item larger than the server takes
/// without sending it.
public struct BulkLimits: Sendable {
    public var maxItems: Int
    public var maxRequestBytes: Int
    public var maxItemBodyBytes: Int

    /// The server's defaults: 1,000 items, 8 MiB a request, 256 KiB a body.
    public static let server = BulkLimits(maxItems: 1000, maxRequestBytes: 8 << 20, maxItemBodyBytes: 256 << 10)

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
    /// How the client waits between attempts (tests pass one that records).
    public var sleep: @Sendable (Double) async -> Void

    public init(
        userKey: UserKey, deviceID: DeviceID? = nil, token: String? = nil, retry: RetryPolicy = .standard,
        limits: BulkLimits = .server, uploadsInFlight: Int = 2,
        sleep: @escaping @Sendable (Double) async -> Void = { seconds in
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        }
    ) {
        self.userKey = userKey
        self.deviceID = deviceID
        self.token = token
        self.retry = retry
        self.limits = limits
        self.uploadsInFlight = max(1, uploadsInFlight)
        self.sleep = sleep
    }
}

/// The sync client for one user key on one box: uploads in bulk, the change
/// feed with 410 recovery, and settings with conditions. README's "Sync from
/// a device" shows it in use; docs/API.md is the contract it follows.
public struct MockCloudClient: Sendable {
    public let configuration: ClientConfiguration
    let transport: any HTTPTransport

    public init(configuration: ClientConfiguration, transport: any HTTPTransport) {
        self.configuration = configuration
        self.transport = transport
    }

    /// Whether a request may be sent again when its answer was lost (a broken
    /// connection, a 500/502/504): true for reads and for writes that
    /// converge when repeated. A 429 or 503 (nothing was done) is always sent
    /// again, after the `Retry-After` the server asked for.
    enum Repeat { case safe, onlyIfNotDone }

    /// Sends `request` with the user's headers, retrying by the policy.
    func exchange(_ request: HTTPRequest, _ retry: Repeat) async throws(ClientError) -> HTTPResponse {
        var request = request
        request.headers.append(("X-User-Key", configuration.userKey.rawValue))
        if let device = configuration.deviceID { request.headers.append(("X-Device-Id", device.rawValue)) }
        if let token = configuration.token { request.headers.append(("Authorization", "Bearer " + token)) }
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            let last = attempt >= policy.maxAttempts
            let response: HTTPResponse
            do {
                response = try await transport.send(request)
            } catch {
                switch error {
                case .untrusted(let detail): throw .untrusted(detail)
                case .setup(let detail): throw .local(detail)
                case .cancelled: throw .cancelled
                case .connection(let detail):
                    guard retry == .safe, !last else {
                        throw .unavailable("\(detail) (\(attempt) attempt\(attempt == 1 ? "" : "s"))")
                    }
                    await configuration.sleep(policy.delay(afterAttempt: attempt, retryAfter: nil))
                    continue
                }
            }
            let notDone = response.status == 429 || response.status == 503
            let maybeDone = response.status == 500 || response.status == 502 || response.status == 504
            if notDone || (maybeDone && retry == .safe) {
                guard !last else {
                    throw .unavailable("\(response.status) \(Self.errorText(response)) (\(attempt) attempts)")
                }
                await configuration.sleep(policy.delay(afterAttempt: attempt, retryAfter: response.header("retry-after")))
                continue
            }
            return response
        }
    }

    /// The answer's JSON object.
    static func object(_ response: HTTPResponse) throws(ClientError) -> JSONObject {
        guard let value = try? JSONParser.parse(response.body, maxDepth: JSONParser.storedDocumentMaxDepth),
            let object = value.objectValue
        else { throw .badAnswer("status \(response.status) with a body that is not a JSON object") }
        return object
    }

    /// The `error` sentence of an error answer, or its status alone.
    static func errorText(_ response: HTTPResponse) -> String {
        (try? object(response))?["error"]?.stringValue ?? "no error text"
    }

    /// `.refused` for an answer the caller did not expect.
    static func refusal(_ response: HTTPResponse) -> ClientError {
        .refused(status: response.status, error: errorText(response))
    }
}
