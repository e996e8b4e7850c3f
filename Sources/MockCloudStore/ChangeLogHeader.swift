import MockCloudSystem

/// The first line of a change log: what compaction left behind.
package struct ChangeLogHeader: Sendable, Equatable {
    /// 16 hex digits naming this incarnation of the inbox; anchors carry it.
    package var generation: String
    /// Anchors older than this may have missed a deletion: they get 410.
    package var compactedThrough: Int64
    /// The highest seq ever assigned when the log was (re)written, so that
    /// seq never goes back even when compaction removed the last records.
    package var lastSeq: Int64
    /// Records the log held right after it was written; the next compaction
    /// waits until it has doubled.
    package var records: Int
    /// Compactions that dropped tombstones; anchors carry it.
    package var epoch: Int64

    package init(generation: String, compactedThrough: Int64, lastSeq: Int64, records: Int, epoch: Int64) {
        self.generation = generation
        self.compactedThrough = compactedThrough
        self.lastSeq = lastSeq
        self.records = records
        self.epoch = epoch
    }
}
