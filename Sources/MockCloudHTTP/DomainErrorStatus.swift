import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

// The errors the lower layers throw, as HTTP answers: the one place where a
// storage, integrity, inbox, settings, key-file or configuration failure gets
// its status and its sentence for the client (`message`); the server-log
// line (`logDetail`) is the error's own description.

extension StorageError: HTTPResponseError {
    /// 507 when a change found the disk full (the client may retry once space
    /// is freed); 500 for every other failure.
    package var status: HTTPStatus { isOutOfSpace ? .insufficientStorage : .internalServerError }

    /// What the phase says of the stored data.
    package var dataChange: DataChange? {
        switch phase {
        case .reading, .writing: return .no
        case .partlyCommitted: return .maybe
        case .syncingAfterCommit: return .yes
        }
    }

    /// The sentence for the client: what happened, whether the data changed,
    /// and whether to try again.
    package var message: String {
        if isPlantedLink { return "refused a symbolic link in the data directory; see the server log" }
        switch phase {
        case .syncingAfterCommit:
            return "the change was made but syncing the data directory failed; it may not survive a power loss."
                + " Retrying the same request is safe"
        case .partlyCommitted:
            return (cause.isNoSpace ? "the data directory is full" : "storage failed")
                + " part-way: some of the changes were made and the others not."
                + " Retrying the same request is safe and makes the rest"
        case .writing:
            let unchanged = "; nothing was written and the stored data is unchanged"
            if cause.isNoSpace { return "the data directory is full" + unchanged }
            if cause.isNotWritable { return "the data directory is not writable" + unchanged }
            return "storage failed" + unchanged
        case .reading:
            return cause.isNotWritable ? "the stored data is not readable" : "reading the stored data failed"
        }
    }

    package var logDetail: String? { description }
}

extension SettingsError: HTTPResponseError {
    package var status: HTTPStatus {
        switch self {
        case .nothingStored: return .notFound
        case .preconditionFailed: return .preconditionFailed
        case .olderThanStored: return .conflict
        case .storedDocumentUnreadable, .storedDocumentNotAnObject: return .internalServerError
        case .storedFormTooLarge, .memberTimesTooLarge: return .contentTooLarge
        case .editTimeMissing, .editTimeUnreadable: return .badRequest
        }
    }

    package var message: String {
        switch self {
        case .nothingStored: return "no settings stored for this user"
        case .preconditionFailed(.nothingToMatch, _):
            return "precondition failed: If-Match given but no settings are stored for this user"
        case .preconditionFailed(.storedTagNotNamed, _):
            return "precondition failed: If-Match does not match the stored settings' ETag"
        case .preconditionFailed(.storedTagNamed, _):
            return "precondition failed: If-None-Match matches the stored settings"
        case .olderThanStored(let incoming, let stored, _):
            return "updatedAt \(incoming) is older than the stored updatedAt \(stored); nothing was written"
        case .storedDocumentUnreadable: return "the stored settings for this user are not valid JSON"
        case .storedDocumentNotAnObject: return "the stored settings for this user are not a JSON object; PUT a new document"
        case .storedFormTooLarge(let size, let limit):
            return "stored in the Python layout (two-space indent) this document would take \(size) bytes, over the \(limit)-byte limit; nest it less deeply"
        case .editTimeMissing:
            return "a per-field patch (X-Merge: fields) needs updatedAt, the time its members were edited; nothing was written"
        case .editTimeUnreadable(let text):
            return "updatedAt \(text) is not a time stamp (e.g. 2026-05-18T10:01:00Z); a per-field patch needs the time"
                + " its members were edited; nothing was written"
        case .memberTimesTooLarge(let size, let limit):
            return "the member times of this document would take \(size) bytes, over the \(limit)-byte limit;"
                + " keep fewer top-level members; nothing was written"
        }
    }

    /// What is stored, beside a 409 or 412, so the client can choose.
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
            return [(HTTPHeader.etag.name, current.etag.text)]
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

extension FreeSpaceError: HTTPResponseError {
    /// 507, as for a full disk: the client may retry once space is freed.
    package var status: HTTPStatus { .insufficientStorage }
    package var dataChange: DataChange? { .no }

    package var message: String {
        "the data directory is nearly full (\(Self.mebibytes(available)) free, below the floor of"
            + " \(Self.mebibytes(floor)) kept free for the system); nothing was written and the stored data is unchanged."
            + " Deleting still works; writes resume once space is freed"
    }

    package var logDetail: String? { description }

    private static func mebibytes(_ bytes: Int64) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}

extension WaitError: HTTPResponseError {
    /// With `Retry-After`, the same request later will wait: 503 when the
    /// box has no room for another waiting request now, 429 when the
    /// client's own address already holds its share.
    package var status: HTTPStatus {
        switch self {
        case .tooManyWaiting: return .serviceUnavailable
        case .addressHoldsItsShare: return .tooManyRequests
        }
    }

    package var message: String {
        switch self {
        case .tooManyWaiting(let limit):
            return "too many requests are waiting for changes (\(limit) at once on this server); "
                + "retry after \(Capacity.retryAfterSeconds) seconds"
        case .addressHoldsItsShare(let share):
            return "too many waiting requests from this address: \(share.places) already "
                + (share.places == 1 ? "waits" : "wait") + " for changes, "
                + "its share of the server's \(share.ofTotal ?? Capacity.waitingAtOnce) places (\(share.setting)); "
                + "retry after \(Capacity.retryAfterSeconds) seconds, or end a wait it no longer needs"
        }
    }

    package var extraHeaders: [(String, String)] { [(HTTPHeader.retryAfter.name, String(Capacity.retryAfterSeconds))] }
    package var logDetail: String? { description }
}

extension IntegrityError: HTTPResponseError {
    package var status: HTTPStatus { .internalServerError }
    /// No detail of the file: that is the server log's.
    package var message: String { "stored data failed its integrity check" }
    package var logDetail: String? { description }
}

extension KeyFileError: HTTPResponseError {
    /// A misconfigured server: every request fails until the file is fixed.
    package var status: HTTPStatus { .internalServerError }
    /// The client is not told the file's path or its problem (`logDetail` is).
    package var message: String { ServerError.misconfiguredMessage }
    package var logDetail: String? { detail }
}

extension ConfigError: HTTPResponseError {
    /// A misconfigured server: every request fails until it is fixed.
    package var status: HTTPStatus { .internalServerError }
    /// The client is not told which setting, nor why (`logDetail` is).
    package var message: String { ServerError.misconfiguredMessage }
    package var logDetail: String? { detail }
    package var dataChange: DataChange? { .no }
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

    package var message: String {
        switch self {
        case .noMessage: return "no message with this id"
        case .lowerVersion(let incoming, let current):
            return "\(HTTPHeader.syncVersion.name) \(incoming) is lower than the stored version \(current.version); nothing was written"
        case .inboxFull(let limit):
            return "inbox full: this key already holds \(limit) messages; delete some first"
        case .malformedAnchor: return "malformed anchor: pass back exactly the anchor a previous page returned"
        case .anchorNotAnswerable: return "\(description); restart without an anchor"
        case .damagedLog: return "the inbox's change log is damaged; see the server log"
        case .damagedMessage: return "a stored message is damaged; see the server log"
        }
    }

    /// The stored message beside a conflict; why, beside a 410.
    package var extraMembers: [JSONMember] {
        switch self {
        case .lowerVersion(_, let current): return [JSONMember("current", current.json)]
        case .anchorNotAnswerable(let reason): return [JSONMember("reason", .string(reason.rawValue))]
        default: return []
        }
    }

    package var logDetail: String? {
        switch self {
        case .damagedLog, .damagedMessage: return description
        default: return nil
        }
    }
}
