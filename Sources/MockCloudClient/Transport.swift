/// One HTTP exchange, as the client hands it to a transport.
public struct HTTPRequest: Sendable {
    /// `GET`, `PUT`, `PATCH`, `POST` or `DELETE`.
    public var method: String
    /// The path and query, e.g. `/inbox?limit=1000`, appended to the base URL.
    public var target: String
    /// Header lines beyond what the transport adds itself (`Accept-Encoding`).
    public var headers: [(name: String, value: String)]
    /// The body; empty for none.
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }
}

/// What came back: the status, the headers (names lowercased), the body
/// already decoded from any `Content-Encoding`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of `name` (any case).
    public func header(_ name: String) -> String? {
        let name = name.lowercased()
        return headers.first { $0.name == name }?.value
    }
}

/// Why no answer came.
public enum TransportError: Error, Sendable, CustomStringConvertible {
    /// The server's certificate did not verify against the trusted CA (or
    /// did not name the host): never retried, never bypassed.
    case untrusted(String)
    /// No connection, or it broke before the whole answer arrived: the
    /// request may or may not have reached the server.
    case connection(String)
    /// The transport could not be set up (a CA file it cannot read, a trust
    /// store that holds more than the box's CA).
    case setup(String)
    /// The calling task was cancelled: the transfer was stopped where it
    /// was, so the request may or may not have reached the server.
    case cancelled

    public var description: String {
        switch self {
        case .untrusted(let detail): return "the server's certificate was not trusted: \(detail)"
        case .connection(let detail): return "connection failed: \(detail)"
        case .setup(let detail): return "transport setup failed: \(detail)"
        case .cancelled: return "cancelled"
        }
    }
}

/// Sends requests to one server over TLS that trusts the box's CA. The
/// client calls it one request at a time; an implementation keeps its
/// connection alive between calls. Cancelling the calling task stops the
/// transfer at once and throws `TransportError.cancelled`; a transport
/// throws only `TransportError`.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}
