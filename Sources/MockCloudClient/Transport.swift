import Foundation
import MockCloudWire

/// One HTTP exchange, as the client hands it to a transport.
public struct TransportRequest: Sendable {
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

extension TransportRequest {
    /// A request of the wire's: `method` on `target` (an `Endpoint`'s path
    /// and any query).
    init(_ method: HTTPMethod, _ target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.init(method: method.description, target: target, headers: headers, body: body)
    }
}

/// What came back: the status, the headers (names lowercased), the body
/// already decoded from any `Content-Encoding`.
public struct TransportResponse: Sendable {
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

/// Why no answer came. A struct, so that kinds can be added without
/// breaking an app's `switch` (match `code`). A cancelled transfer throws
/// `CancellationError`.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The kind of failure. New kinds may be added in a minor release.
    public typealias Code = ExtensibleKind<TransportError>

    public let code: Code
    /// What the TLS or HTTP library said.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public static func untrusted(_ detail: String) -> TransportError { TransportError(.untrusted, detail) }
    public static func connection(_ detail: String) -> TransportError { TransportError(.connection, detail) }
    public static func setup(_ detail: String) -> TransportError { TransportError(.setup, detail) }

    public var description: String {
        switch code {
        case .untrusted: return "the server's certificate was not trusted: \(detail)"
        case .connection: return "connection failed: \(detail)"
        default: return "transport setup failed: \(detail)"
        }
    }

    /// The same sentence as `description`, for alerts.
    public var errorDescription: String? { description }
}

extension ExtensibleKind where Owner == TransportError {
    /// The server's certificate did not verify against the trusted CA (or
    /// did not name the host): never retried, never bypassed.
    public static var untrusted: Self { Self("untrusted") }
    /// No connection, or it broke before the whole answer arrived: the
    /// request may or may not have reached the server.
    public static var connection: Self { Self("connection") }
    /// The transport could not be set up (a CA file it cannot read, a trust
    /// store that holds more than the box's CA, a URL that is not https).
    public static var setup: Self { Self("setup") }
}

/// Sends requests to one server over TLS that trusts the box's CA.
///
/// The client calls `send` concurrently, so an implementation must take
/// several requests at once (each on a connection or an HTTP/2 stream of
/// its own): `upload` keeps `ClientConfiguration.uploadsInFlight` bulk
/// requests in flight (2 by default), a follow's waiting request is held
/// by the box for up to `ClientConfiguration.wait` while others are sent,
/// a `SyncEngine` sends, follows the feed and follows the settings at the
/// same time, and an app may call the client from several tasks. It keeps
/// its connections alive between calls. A request that takes longer than
/// the transport's request timeout fails as `connection` (both transports
/// here take one: `requestTimeout`, longer than the longest wait).
/// Cancelling the calling task stops the transfer at once and throws
/// `CancellationError`; a transport throws only `TransportError` otherwise.
public protocol HTTPTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// A transport's base URL as the text requests are appended to.
enum TransportBase {
    /// `url` without a trailing slash; `setup` unless it is https with a
    /// host and no query or fragment (requests add their own path).
    static func text(of url: URL) throws -> String {
        guard url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
        else { throw TransportError.setup("the box's URL must be https://host[:port] (got \(url.absoluteString))") }
        let text = url.absoluteString
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
