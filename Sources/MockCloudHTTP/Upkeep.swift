/// Work a route leaves for after its answer (an inbox's compaction): the
/// client's answer neither waits for it nor depends on it.
package struct Upkeep {
    /// The work; a failure is logged and retried by the next write's upkeep.
    package let run: () throws -> Void

    package init(_ run: @escaping () throws -> Void) {
        self.run = run
    }
}
