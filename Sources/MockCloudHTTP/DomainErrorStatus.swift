import MockCloudJSON
import MockCloudStore
import MockCloudSystem

// The statuses of the errors the lower layers throw: the one place where a
// storage, integrity, inbox or key-file failure becomes an HTTP answer. Their
// sentences (`message`) and server-log lines (`logDetail`) are their own.

extension StorageError: HTTPResponseError {
    /// 507 when a change found the disk full (the client may retry once space
    /// is freed); 500 for every other failure.
    package var status: HTTPStatus { isOutOfSpace ? .insufficientStorage : .internalServerError }
}

extension IntegrityError: HTTPResponseError {
    package var status: HTTPStatus { .internalServerError }
}

extension KeyFileError: HTTPResponseError {
    /// A misconfigured server: every request fails until the file is fixed.
    package var status: HTTPStatus { .internalServerError }
}

extension InboxError: HTTPResponseError {
    package var status: HTTPStatus {
        switch self {
        case .noMessage: return .notFound
        case .lowerVersion: return .conflict
        case .inboxFull: return .insufficientStorage
        case .malformedAnchor: return .badRequest
        case .anchorNotAnswerable: return .gone
        case .damagedLog, .damagedMessage: return .internalServerError
        }
    }
}
