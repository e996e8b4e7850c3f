import MockCloudJSON

/// What `/user/settings` refuses, beyond the common request errors.
package enum SettingsError: HTTPResponseError {
    case nothingStored
    /// `If-Match` / `If-None-Match` failed; `current` is what is stored, if anything.
    case preconditionFailed(reason: String, current: StoredSettings?)
    /// The incoming `updatedAt` is older than the stored one.
    case olderThanStored(incoming: String, stored: String, current: StoredSettings)
    /// The stored file is not JSON (edited or damaged by hand).
    case storedDocumentUnreadable(file: String)
    /// The stored file is JSON but not an object, so nothing can be merged into it.
    case storedDocumentNotAnObject(file: String)
    case mergePatchNotObject
    /// Python's indented layout of a deeply nested body can be many times its size.
    case storedFormTooLarge(size: Int, limit: Int)

    package var status: HTTPStatus {
        switch self {
        case .nothingStored: return .notFound
        case .preconditionFailed: return .preconditionFailed
        case .olderThanStored: return .conflict
        case .storedDocumentUnreadable, .storedDocumentNotAnObject: return .internalServerError
        case .mergePatchNotObject: return .badRequest
        case .storedFormTooLarge: return .contentTooLarge
        }
    }

    package var message: String {
        switch self {
        case .nothingStored: return "no settings stored for this user"
        case .preconditionFailed(let reason, _): return "precondition failed: \(reason)"
        case .olderThanStored(let incoming, let stored, _):
            return "updatedAt \(incoming) is older than the stored updatedAt \(stored); nothing was written"
        case .storedDocumentUnreadable: return "the stored settings for this user are not valid JSON"
        case .storedDocumentNotAnObject: return "the stored settings for this user are not a JSON object; PUT a new document"
        case .mergePatchNotObject: return "merge patch must be a JSON object"
        case .storedFormTooLarge(let size, let limit):
            return "stored in the Python layout (two-space indent) this document would take \(size) bytes, over the \(limit)-byte limit; nest it less deeply"
        }
    }

    package var extraMembers: [JSONMember] {
        switch self {
        case .preconditionFailed(_, let current?), .olderThanStored(_, _, let current):
            return current.document.map { [JSONMember("current", $0)] } ?? []
        default: return []
        }
    }

    package var extraHeaders: [(String, String)] {
        switch self {
        case .preconditionFailed(_, let current?), .olderThanStored(_, _, let current):
            return [("ETag", current.etag)]
        default: return []
        }
    }

    package var logDetail: String? {
        switch self {
        case .storedDocumentUnreadable(let file): return "\(file) is not valid JSON; not served"
        case .storedDocumentNotAnObject(let file): return "\(file) is not a JSON object; cannot be patched"
        default: return nil
        }
    }
}
