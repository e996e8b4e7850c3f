import Foundation

/// Why a client call failed, in words a user can act on.
///
/// A struct, not an enum, so that later releases can add kinds of failure
/// without breaking an app's `switch`: match the kind with `code`
/// (`catch let error as ClientError where error.code == .unavailable`, or
/// the pattern `catch ClientError.Code.unavailable`). Cancellation is not a
/// `ClientError`: a cancelled call throws `CancellationError`.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The kind of failure. New kinds may be added in a minor release.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The caller passed something the server would refuse (an id, a body).
        public static let invalidArgument = Code("invalidArgument")
        /// The server's certificate did not verify against the box's CA, or
        /// the CA file did not have the expected fingerprint. Never retried.
        public static let untrusted = Code("untrusted")
        /// No usable answer after every retry: the server is down,
        /// restarting or unreachable. What was already acknowledged stays
        /// acknowledged; sending again is safe.
        public static let unavailable = Code("unavailable")
        /// The server refused the request as a whole (`status` and its `error`).
        public static let refused = Code("refused")
        /// An answer the client does not understand.
        public static let badAnswer = Code("badAnswer")
        /// A local file (CA, anchor, state) could not be read or written.
        public static let local = Code("local")
    }

    public let code: Code
    /// What happened, without the kind's prefix: for `refused`, the server's
    /// `error` sentence.
    public let detail: String
    /// For `refused`: the status the server answered; nil for other kinds.
    public let status: Int?

    private init(_ code: Code, _ detail: String, status: Int? = nil) {
        self.code = code
        self.detail = detail
        self.status = status
    }

    public static func invalidArgument(_ detail: String) -> ClientError { ClientError(.invalidArgument, detail) }
    public static func untrusted(_ detail: String) -> ClientError { ClientError(.untrusted, detail) }
    public static func unavailable(_ detail: String) -> ClientError { ClientError(.unavailable, detail) }
    public static func refused(status: Int, error: String) -> ClientError { ClientError(.refused, error, status: status) }
    public static func badAnswer(_ detail: String) -> ClientError { ClientError(.badAnswer, detail) }
    public static func local(_ detail: String) -> ClientError { ClientError(.local, detail) }

    public var description: String {
        switch code {
        case .invalidArgument: return "invalid argument: \(detail)"
        case .untrusted: return "not trusted: \(detail)"
        case .unavailable: return "server unavailable: \(detail)"
        case .refused: return "refused (\(status ?? 0)): \(detail)"
        case .badAnswer: return "unexpected answer: \(detail)"
        default: return detail
        }
    }

    /// The same sentence as `description`, for alerts.
    public var errorDescription: String? { description }
}

extension ClientError.Code {
    /// `catch ClientError.Code.unavailable { … }`: matches a `ClientError` of this kind.
    public static func ~= (code: ClientError.Code, error: any Error) -> Bool {
        (error as? ClientError)?.code == code
    }
}

extension ClientError {
    /// A local failure in words (a storage error names its system call and errno).
    package static func describe(_ error: any Error) -> String { String(describing: error) }
}
