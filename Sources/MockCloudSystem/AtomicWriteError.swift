/// A failed atomic write (`AtomicFile`, `AtomicBatch`, `PendingFile`): the
/// call that failed, and how much of the write a reader could see by then.
/// What that means for stored data (a store's `StorageError.Phase`) is the
/// writer's to say.
package struct AtomicWriteError: Error, Equatable, CustomStringConvertible {
    /// How much of the write a reader could see when it failed.
    package enum Seen: Sendable, Equatable {
        /// None of it: every file is as it was, and the temporary files are
        /// removed.
        case nothing
        /// Some of the files are new and the others old; each file is whole.
        case part
        /// Every file is new; only making that durable (an fsync after the
        /// renames) failed.
        case all
    }

    /// The failed call, with its errno.
    package let cause: SystemError
    package let seen: Seen

    package init(_ cause: SystemError, _ seen: Seen) {
        self.cause = cause
        self.seen = seen
    }

    package var description: String { cause.description }
}
