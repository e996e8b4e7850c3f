import MockCloudSystem

/// Limits and compaction settings of the inbox.
package struct InboxSettings: Sendable {
    /// Live messages one key may hold (`MOCKCLOUD_INBOX_MAX_MESSAGES`).
    package var maxMessages = 100_000
    /// How long a tombstone is kept for anchored readers
    /// (`MOCKCLOUD_INBOX_TOMBSTONE_HORIZON`, seconds; 30 days by default).
    package var tombstoneHorizonSeconds: Int64 = 30 * 86400
    /// The log is compacted once it holds this many records and twice as many
    /// as after the last compaction, so compaction costs O(1) per write.
    package var compactionMinimumRecords = 1024
    /// Writes other than deletions are refused while the data directory's
    /// file system has less free space than this (`MOCKCLOUD_MIN_FREE_MB`).
    package var minimumFreeBytes: Int64 = FreeSpaceError.defaultFloor

    package init() {}
}
