/// Whether this process has begun to put a change of stored data in place
/// (its first rename or unlink a reader could see). A CGI process answers
/// one request, so the answers written where no typed error says how far a
/// write got (a time-out, a crash, an unexpected error) can still tell the
/// client whether the stored data may have changed.
package enum WriteProgress {
    nonisolated(unsafe) private static var begun = false

    /// True once a change may be visible to readers.
    package static var mayHaveChanged: Bool { begun }

    /// Called just before the first step that a reader could see.
    @inline(__always)
    package static func beginVisibleChange() { begun = true }

    /// A new request begins in a process that answers many (a FastCGI
    /// worker): nothing of it is visible yet.
    package static func reset() { begun = false }
}
