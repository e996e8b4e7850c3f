import Foundation

/// A kind of outcome of `Owner`'s (`ClientError.Code`,
/// `TransportError.Code`, `SettingsReconciliation.Kind`): compared with
/// `==` and matched in a `switch` with a `default`, so that a release can
/// add kinds without breaking an app, as enum cases would.
public struct ExtensibleKind<Owner>: Sendable, Hashable, CustomStringConvertible {
    private let name: String
    init(_ name: String) { self.name = name }
    public var description: String { name }
}

/// Why a client call failed, in words a user can act on.
///
/// A struct, not an enum, so that later releases can add kinds of failure
/// without breaking an app's `switch`: match the kind with `code`
/// (`catch let error as ClientError where error.code == .unavailable`, or
/// the pattern `catch ClientError.Code.unavailable`). Cancellation is not a
/// `ClientError`: a cancelled call throws `CancellationError`.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The kind of failure. New kinds may be added in a minor release.
    public typealias Code = ExtensibleKind<ClientError>

    public let code: Code
    /// What happened, without the kind's prefix: for `refused`, the server's
    /// `error` sentence.
    public let detail: String
    /// For `refused`: the status the server answered. For `unavailable`:
    /// the status of the last answer when the server did answer (a 5xx, or
    /// a 429 past its `Retry-After`, through every retry), nil when no
    /// answer came. nil for other kinds.
    public let status: Int?

    private init(_ code: Code, _ detail: String, status: Int? = nil) {
        self.code = code
        self.detail = detail
        self.status = status
    }

    public static func invalidArgument(_ detail: String) -> ClientError { ClientError(.invalidArgument, detail) }
    public static func untrusted(_ detail: String) -> ClientError { ClientError(.untrusted, detail) }
    public static func unavailable(_ detail: String) -> ClientError { ClientError(.unavailable, detail) }
    /// `unavailable` after answers that were all 5xx or 429, the last with `lastStatus`.
    package static func unavailable(_ detail: String, lastStatus: Int) -> ClientError {
        ClientError(.unavailable, detail, status: lastStatus)
    }
    public static func refused(status: Int, error: String) -> ClientError { ClientError(.refused, error, status: status) }
    public static func badAnswer(_ detail: String) -> ClientError { ClientError(.badAnswer, detail) }
    public static func local(_ detail: String) -> ClientError { ClientError(.local, detail) }
    public static func stateInUse(_ detail: String) -> ClientError { ClientError(.stateInUse, detail) }
    public static func stateDamaged(_ detail: String) -> ClientError { ClientError(.stateDamaged, detail) }
    public static func stateNotWritable(_ detail: String) -> ClientError { ClientError(.stateNotWritable, detail) }

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

extension ExtensibleKind where Owner == ClientError {
    /// The caller passed something the server would refuse (an id, a body).
    public static var invalidArgument: Self { Self("invalidArgument") }
    /// The server's certificate did not verify against the box's CA, or the
    /// CA file did not have the expected fingerprint. Never retried.
    public static var untrusted: Self { Self("untrusted") }
    /// No usable answer after every retry: the server is down, restarting
    /// or unreachable. What was already acknowledged stays acknowledged;
    /// sending again is safe.
    public static var unavailable: Self { Self("unavailable") }
    /// The server refused the request as a whole (`status` and its `error`).
    public static var refused: Self { Self("refused") }
    /// An answer the client does not understand.
    public static var badAnswer: Self { Self("badAnswer") }
    /// A local file (CA, anchor, state) could not be read or written, and
    /// none of the state's kinds below says more.
    public static var local: Self { Self("local") }
    /// A `SyncEngine`'s state directory is held by another engine, in this
    /// process or another: use that one, or close it first.
    public static var stateInUse: Self { Self("stateInUse") }
    /// A `SyncEngine`'s state file is damaged (`detail` names it and the
    /// record): nothing was sent and the file is as it was.
    public static var stateDamaged: Self { Self("stateDamaged") }
    /// A `SyncEngine`'s state could not be written (a full disk, a folder
    /// that is not writable): nothing of the call was recorded.
    public static var stateNotWritable: Self { Self("stateNotWritable") }

    /// `catch ClientError.Code.unavailable { … }`: matches a `ClientError` of this kind.
    public static func ~= (code: Self, error: any Error) -> Bool {
        (error as? ClientError)?.code == code
    }
}

extension ClientError {
    /// A local failure in words (a storage error names its system call and errno).
    package static func describe(_ error: any Error) -> String { String(describing: error) }
}
