/// Work a route leaves for after its answer (an inbox's compaction): the
/// client's answer neither waits for it nor depends on it. Not an optional:
/// `Optional<Upkeep>` would cost every process its run-time metadata.
package struct Upkeep {
    /// The work; a failure is logged and retried by the next write's upkeep.
    package let run: () throws -> Void
    /// False for `none`: the answer is all there is.
    package let isNeeded: Bool

    package init(_ run: @escaping () throws -> Void) {
        self.run = run
        isNeeded = true
    }

    private init() {
        run = {}
        isNeeded = false
    }

    /// Nothing to do after the answer.
    package static var none: Upkeep { Upkeep() }
}
