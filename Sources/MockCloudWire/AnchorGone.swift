/// Why the server cannot answer from an anchor: the `reason` member of the
/// feed's 410 (docs/API.md §4). A reader restarts without an anchor in
/// every case; a writer that keeps an anchor to learn whether acknowledged
/// writes were lost (`mockcloud-sync push`) tells them apart.
package enum AnchorGone: String, Sendable, CaseIterable {
    /// Compaction dropped deletions the anchor had not seen. The inbox is
    /// the same one: every write it acknowledged is still there, or was
    /// replaced or deleted by a later write.
    case compacted
    /// The anchor belongs to another generation of the inbox: it was
    /// restored from a backup, or wiped and rebuilt. Acknowledged writes
    /// may be gone.
    case replaced
    /// The anchor is beyond anything the inbox holds: it lost writes it had
    /// acknowledged (its files were put back from an older copy).
    case ahead
}
