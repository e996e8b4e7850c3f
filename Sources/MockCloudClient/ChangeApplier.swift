import MockCloudWire

/// Where an app keeps what it read from the feed: its database, with the
/// anchor in it. `BoxClient.sync(into:)` hands each page to `apply`,
/// which must change the data and save the anchor in one transaction, so
/// that a crash leaves the old data with the old anchor or the new data
/// with the new one (never data newer than its anchor says, nor older).
public protocol ChangeApplier: Sendable {
    /// The anchor saved with the data; nil before the first sync (or after
    /// the app forgot its copy): the read is then a full one.
    func savedAnchor() async throws -> Anchor?

    /// In one transaction: insert or replace `changes.messages` by id,
    /// remove `changes.deleted` by id, and when `changes.liveIDs` is set
    /// (the last page of a full read) remove every id not in it; then, when
    /// `anchor` is not nil, save it in place of the old one. During a full
    /// read `anchor` is nil until its last page: a read broken off half-way
    /// starts again from the beginning.
    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws
}

/// What `sync(into:)` did.
public struct SyncSummary: Sendable, Equatable {
    /// Pages applied.
    public var pages = 0
    /// Messages inserted or replaced, deletions applied.
    public var messages = 0, deletions = 0
    /// The saved anchor was refused (410: the inbox was restored or rebuilt,
    /// or deletions after it were compacted away) and the whole state was
    /// read again; everything not in it was removed.
    public var resynced = false
    /// The anchor saved last.
    public var anchor: Anchor?
}

extension BoxClient {
    /// Brings `applier` up to date with the feed, from its saved anchor to
    /// the end, page by page; the 410 full read is handled here (README,
    /// "Keeping an anchor"). With `excludingOwnWrites` (and a device id),
    /// incremental reads skip this device's own writes; full reads never do.
    /// Throws what `changes(since:)` throws, or what `apply` throws (the
    /// pages applied before stay applied with their anchor).
    public func sync(into applier: some ChangeApplier, excludingOwnWrites: Bool = true) async throws -> SyncSummary {
        try await apply(into: applier, excludingOwnWrites: excludingOwnWrites, follow: false) { _, _ in }
    }

    /// `sync(into:)`'s loop; with `follow`, it keeps applying each change as
    /// it commits until the task is cancelled (`SyncEngine`, `pull
    /// --follow`). `beforeEach` sees each page before it is applied (and its
    /// anchor saved), `afterEach` once it is, with the summary so far.
    package func apply(
        into applier: some ChangeApplier, excludingOwnWrites: Bool, follow: Bool,
        beforeEach: (_ page: ChangePage) async throws -> Void = { _ in },
        afterEach: (_ page: ChangePage, _ summary: SyncSummary) async throws -> Void
    ) async throws -> SyncSummary {
        var summary = SyncSummary()
        summary.anchor = try await applier.savedAnchor()
        for try await page in changes(since: summary.anchor, excludingOwnWrites: excludingOwnWrites, follow: follow) {
            let save = page.anchorIsFinal ? page.anchor : nil
            try await beforeEach(page)
            try await applier.apply(page, saving: save)
            summary.pages += 1
            summary.messages += page.messages.count
            summary.deletions += page.deleted.count
            if page.startsResync { summary.resynced = true }
            if let save { summary.anchor = save }
            try await afterEach(page, summary)
        }
        return summary
    }
}
