/// Why storage failed, in words for the client; the `SystemError` goes to the
/// server log. It carries no HTTP status: the HTTP layer maps it.
package struct StorageError: Error, Equatable {
    /// When in a read or a change the failure happened.
    package enum Phase: Sendable, Equatable {
        /// Reading stored data; nothing was being changed.
        case reading
        /// Changing data, before the change took effect: nothing was written.
        case writing
        /// The change is in place; only making it durable (fsync of its
        /// directory) failed.
        case syncingAfterCommit
    }

    /// The failed call, with its errno.
    package let cause: SystemError
    package let phase: Phase

    package init(_ cause: SystemError, _ phase: Phase) {
        self.cause = cause
        self.phase = phase
    }

    /// True when the disk or quota was full while changing data: the client
    /// may retry once space is freed.
    package var isOutOfSpace: Bool { phase == .writing && cause.isNoSpace }

    /// The sentence for the client: what happened and whether data changed.
    package var message: String {
        let outcome: String
        switch phase {
        case .syncingAfterCommit:
            return "the change was made but syncing the data directory failed; it may not survive a power loss"
        case .writing: outcome = "; nothing was written and the stored data is unchanged"
        case .reading: outcome = ""
        }
        let writing = phase == .writing
        if cause.isNoSpace { return "the data directory is full" + outcome }
        if cause.isNotWritable {
            return (writing ? "the data directory is not writable" : "the stored data is not readable") + outcome
        }
        return (writing ? "storage failed" : "reading the stored data failed") + outcome
    }

    /// The failed call for the server log.
    package var logDetail: String? { cause.description }
}
