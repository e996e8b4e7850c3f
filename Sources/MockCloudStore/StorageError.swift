import MockCloudSystem

/// A failed storage call and how far the change had got when it failed: the
/// HTTP layer words it for the client (and says whether the data changed),
/// the `SystemError` goes to the server log.
package struct StorageError: Error, Equatable, CustomStringConvertible {
    /// How far a read or a change had got when the call failed.
    package enum Phase: Sendable, Equatable {
        /// Reading stored data; nothing was being changed.
        case reading
        /// Changing data, before any of the change could be seen: nothing
        /// visible changed.
        case writing
        /// Some of a change of many documents is in place and the rest is
        /// not; each document is in its old state or its new one.
        case partlyCommitted
        /// The whole change is in place; only making it durable (an fsync
        /// after the renames) failed.
        case syncingAfterCommit
    }

    /// The failed call, with its errno.
    package let cause: SystemError
    package let phase: Phase

    package init(_ cause: SystemError, _ phase: Phase) {
        self.cause = cause
        self.phase = phase
    }

    /// A failed atomic write of stored data, by what readers could see of it.
    package init(_ failure: AtomicWriteError) {
        switch failure.seen {
        case .nothing: self.init(failure.cause, .writing)
        case .part: self.init(failure.cause, .partlyCommitted)
        case .all: self.init(failure.cause, .syncingAfterCommit)
        }
    }

    /// Runs `body`, which writes stored files atomically, with its
    /// failures as `StorageError`s, by what readers saw of the write.
    static func writing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as AtomicWriteError {
            throw StorageError(failure)
        }
    }

    /// True when the disk or quota was full while changing data, before the
    /// whole change was in place.
    package var isOutOfSpace: Bool { cause.isNoSpace && (phase == .writing || phase == .partlyCommitted) }

    /// True when the failure was a symbolic link where the data directory
    /// keeps its own files (`O_NOFOLLOW`, `Sys.checkDirectory`).
    package var isPlantedLink: Bool { cause.errno == .tooManyLinks }

    /// The failed call, for the server log and the admin tool.
    package var description: String {
        guard isPlantedLink else { return cause.description }
        return cause.description
            + " (a symbolic link where the service keeps its own files: refused, never followed; remove it)"
    }
}
