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

    /// The failed call for the server log.
    package var logDetail: String? {
        guard isPlantedLink else { return cause.description }
        return cause.description
            + " (a symbolic link where the service keeps its own files: refused, never followed; remove it)"
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

    package var logDetail: String? {
        "refused a write: \(available) bytes free on the data directory's file system, below"
            + " MOCKCLOUD_MIN_FREE_MB (\(floor) bytes); free some space or lower the floor"
    }

    private static func mebibytes(_ bytes: Int64) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}

extension IntegrityError: HTTPResponseError {
    package var status: HTTPStatus { .internalServerError }
}

extension KeyFileError: HTTPResponseError {
    /// A misconfigured server: every request fails until the file is fixed.
    package var status: HTTPStatus { .internalServerError }
    /// The client is not told the file's path or its problem (`logDetail` is).
    package var message: String { ServerError.misconfiguredMessage }
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
