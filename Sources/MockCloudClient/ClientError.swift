/// Why a client call failed, in words a user can act on.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The caller passed something the server would refuse (an id, a body).
    case invalidArgument(String)
    /// The server's certificate did not verify against the box's CA, or the
    /// CA file did not have the expected fingerprint. Never retried.
    case untrusted(String)
    /// No usable answer after every retry: the server is down, restarting or
    /// unreachable. What was already acknowledged stays acknowledged;
    /// sending again is safe.
    case unavailable(String)
    /// The server refused the request as a whole (status and its `error`).
    case refused(status: Int, error: String)
    /// An answer the client does not understand.
    case badAnswer(String)
    /// A local file (CA, anchor, state) could not be read or written.
    case local(String)
    /// The task was cancelled: the request in flight was stopped and no
    /// retry followed. A write may or may not have been applied (send it
    /// again: writes converge).
    case cancelled

    public var description: String {
        switch self {
        case .invalidArgument(let text): return "invalid argument: \(text)"
        case .untrusted(let text): return "not trusted: \(text)"
        case .unavailable(let text): return "server unavailable: \(text)"
        case .refused(let status, let error): return "refused (\(status)): \(error)"
        case .badAnswer(let text): return "unexpected answer: \(text)"
        case .local(let text): return text
        case .cancelled: return "cancelled"
        }
    }
}

extension ClientError {
    /// A local failure in words (a storage error names its system call and errno).
    package static func describe(_ error: any Error) -> String { String(describing: error) }
}
