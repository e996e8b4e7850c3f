import MockCloudJSON
import MockCloudWire

/// One page of changes as `changes(since:)` hands it out: the server's page
/// (`messages`, `deleted`, `anchor`, `hasMore`, read through to `page`) and
/// where it stands in the read. Apply `messages` (insert or replace by id)
/// and `deleted` (remove by id), then save `anchor` with them, in that order
/// (README, "Keeping an anchor"). During a full read, save the anchor only
/// with the last page, after dropping what `liveIDs` leaves out: a read
/// broken off half-way then starts again from the beginning.
/// `BoxClient.sync(into:)` does all of this for a `ChangeApplier`.
@dynamicMemberLookup
public struct ChangePage: Sendable {
    /// The page as the server sent it, minus any message this sequence
    /// already handed out at the same version and seq.
    public var page: FeedPage
    /// This page belongs to a full read: one that started without an
    /// anchor, because none was given or after a 410.
    public var isFullRead: Bool
    /// The first page after a 410: the server cannot answer from the old
    /// anchor (its inbox was restored or rebuilt, or deletions were compacted
    /// away), so what you hold may be stale. What follows is the whole state.
    public var startsResync: Bool
    /// On the last page of a full read: every message id the server holds.
    /// Drop anything you hold that is not in it.
    public var liveIDs: Set<MessageID>?
    /// On the last page of a full read after a 410 that says the server may
    /// have lost acknowledged writes (`replaced`, `ahead`, or no reason):
    /// every message id it holds, with its version. The engine sends again
    /// what it had sent that is missing (docs/SYNC.md).
    var heldVersions: [MessageID: Int64]?

    public subscript<T>(dynamicMember member: KeyPath<FeedPage, T>) -> T { page[keyPath: member] }

    /// True when this page's anchor is the one to save with it: every page of
    /// an incremental read, the last page of a full one.
    public var anchorIsFinal: Bool { !isFullRead || !page.hasMore }

    /// A page as a feed read hands it out (and as appliers' tests make one).
    package init(page: FeedPage, isFullRead: Bool, startsResync: Bool, liveIDs: Set<MessageID>?) {
        self.page = page
        self.isFullRead = isFullRead
        self.startsResync = startsResync
        self.liveIDs = liveIDs
    }
}

/// `changes(since:)`: pages until the feed is exhausted (`hasMore` false),
/// or, following, pages as changes commit until the task is cancelled.
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = ChangePage
    let client: BoxClient
    let anchor: Anchor?
    let pageSize: Int
    let excludeOwn: Bool
    let follow: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, anchor: anchor, pageSize: pageSize, excludeOwn: excludeOwn, follow: follow)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let client: BoxClient
        var anchor: Anchor?
        let pageSize: Int
        let excludeOwn: Bool
        /// Once the feed is exhausted, wait for the next change instead of ending.
        let follow: Bool
        var finished = false
        /// Following, and every change so far handed out: the next request waits.
        var caughtUp = false
        var fullRead: Bool
        var resyncPending = false
        /// What this sequence handed out: id → (version, seq).
        var delivered: [MessageID: (Int64, Int64)] = [:]
        /// During a full read: the ids seen so far, live at the last look.
        var live: Set<MessageID> = []
        /// During a full read after a 410 that may have lost writes: the
        /// ids and versions seen so far (`ChangePage.heldVersions`).
        var held: [MessageID: Int64]?

        init(client: BoxClient, anchor: Anchor?, pageSize: Int, excludeOwn: Bool, follow: Bool) {
            self.client = client
            self.anchor = anchor
            self.pageSize = pageSize
            self.excludeOwn = excludeOwn
            self.follow = follow
            fullRead = anchor == nil
        }

        /// The next page, asked for as soon as this one's anchor was known:
        /// its round trip overlaps the caller's work on this page. It lives
        /// no longer than its consumer: dropping the iterator cancels it,
        /// and so does cancelling the consumer's task (at its next `next()`,
        /// or while it waits in one).
        var prefetch: Prefetch?

        public mutating func next() async throws -> ChangePage? {
            guard !finished else { return nil }
            var answer: BoxClient.FeedRead
            if Task.isCancelled {
                prefetch?.cancel()
                prefetch = nil
                throw CancellationError()
            }
            if caughtUp {
                answer = try await waitForChanges()
            } else if let prefetch {
                self.prefetch = nil
                answer = try await prefetch.value()
            } else {
                answer = try await client.feedRead(after: anchor, limit: pageSize, excludeOwn: excludeOwn && !fullRead)
            }
            if case .gone(let reason) = answer {
                // 410: start again from nothing, without exclude-source (the
                // device's own messages are part of the state to rebuild).
                guard anchor != nil || !fullRead else {
                    throw ClientError.badAnswer("a read without an anchor answered 410")
                }
                anchor = nil
                fullRead = true
                resyncPending = true
                live = []
                if reason != .compacted || held != nil { held = [:] }
                answer = try await client.feedRead(after: nil, limit: pageSize, excludeOwn: false)
            }
            guard case .page(let answer) = answer else { throw ClientError.badAnswer("a read without an anchor answered 410") }
            var page = ChangePage(page: answer, isFullRead: fullRead, startsResync: resyncPending, liveIDs: nil)
            anchor = answer.anchor
            resyncPending = false
            var fresh: [Envelope] = []
            for message in answer.messages {
                if fullRead { live.insert(message.id) }
                held?[message.id] = message.version
                if let seen = delivered[message.id], seen == (message.version, message.seq) { continue }
                delivered[message.id] = (message.version, message.seq)
                fresh.append(message)
            }
            page.page.messages = fresh
            for deletion in answer.deleted {
                delivered[deletion.id] = nil
                if fullRead { live.remove(deletion.id) }
                held?[deletion.id] = nil
            }
            if !answer.hasMore {
                if fullRead { page.liveIDs = live }
                page.heldVersions = held
                held = nil
                if follow {
                    caughtUp = true
                    fullRead = false
                } else {
                    finished = true
                }
            } else {
                let (client, next, limit, exclude) = (client, answer.anchor, pageSize, excludeOwn && !fullRead)
                prefetch = Prefetch(Task { try await client.feedRead(after: next, limit: limit, excludeOwn: exclude) })
            }
            return page
        }

        /// Following: waits (`?wait=`) from the anchor until an answer has
        /// something to hand out, a change or an anchor moved past this
        /// device's own writes, or a 410, which `next` handles like any
        /// other. Throws `CancellationError` once the task is cancelled.
        /// The box unreachable after every retry (a long restart, the Wi-Fi
        /// gone) is waited out and tried again, however long it lasts.
        mutating func waitForChanges() async throws -> BoxClient.FeedRead {
            while true {
                let (client, anchor, limit, excludeOwn) = (client, anchor, pageSize, excludeOwn)
                let answer = try await client.waitingOutUnavailable {
                    try await client.feedRead(after: anchor, limit: limit, excludeOwn: excludeOwn, wait: client.configuration.waitSeconds)
                }
                guard case .page(let page) = answer else {
                    caughtUp = false
                    return answer
                }
                if page.messages.isEmpty, page.deleted.isEmpty, page.anchor == anchor { continue }
                if page.hasMore { caughtUp = false }
                return answer
            }
        }
    }
}

/// The request for a feed's next page, made while its consumer works on
/// the current one, and bound to that consumer: released (the iterator
/// dropped) or cancelled, it cancels the request in flight, which the
/// transports stop at once.
final class Prefetch: Sendable {
    private let task: Task<BoxClient.FeedRead, any Error>

    init(_ task: Task<BoxClient.FeedRead, any Error>) { self.task = task }

    deinit { task.cancel() }

    func cancel() { task.cancel() }

    /// The page; cancelling the waiting task cancels the request.
    func value() async throws -> BoxClient.FeedRead {
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }
}

extension BoxClient {
    /// The feed after `anchor` (nil: from the beginning), page by page.
    /// Incremental reads skip this device's own writes (`exclude-source`)
    /// when `excludingOwnWrites` and a device id is configured; full reads
    /// never do. On a 410 it starts again from no anchor and says so
    /// (`FeedPage.startsResync`), never handing out the same id at the same
    /// version and seq twice.
    ///
    /// With `follow`, the sequence does not end when the feed is exhausted:
    /// it waits for the next change (`GET /inbox?wait=`, for
    /// `ClientConfiguration.waitSeconds` at a time) and hands it out as soon
    /// as it commits, until the task is cancelled (which stops the waiting
    /// request at once and throws `CancellationError`). A broken connection or a
    /// restart of the box is retried from the same anchor: nothing is missed
    /// or handed out twice. `pageSize` is kept within the box's page sizes
    /// (1 to 1,000); the default asks for its largest.
    public func changes(
        since anchor: Anchor?, pageSize: Int = .max, excludingOwnWrites: Bool = true,
        follow: Bool = false
    ) -> ChangeFeed {
        ChangeFeed(client: self, anchor: anchor, pageSize: min(max(pageSize, WireLimits.feedPageSizes.lowerBound), WireLimits.feedPageSizes.upperBound),
                   excludeOwn: excludingOwnWrites && configuration.deviceID != nil, follow: follow)
    }

    /// A feed read's answer: a page, or 410 and why (nil: the server did not say).
    enum FeedRead: Sendable {
        case page(FeedPage)
        case gone(AnchorGone?)
    }

    /// One `GET /inbox` page (held up to `wait` seconds when given), or the 410's reason.
    func feedRead(after anchor: Anchor?, limit: Int, excludeOwn: Bool, wait: Int? = nil) async throws -> FeedRead {
        var target = Endpoint.inbox.path + "?\(QueryParameters.limit)=\(limit)"
        if let anchor { target += "&\(QueryParameters.anchor)=" + anchor.rawValue }
        if excludeOwn, let device = configuration.deviceID { target += "&\(QueryParameters.excludeSource)=" + device.rawValue }
        if let wait { target += "&\(QueryParameters.wait)=\(wait)" }
        let response = try await exchange(TransportRequest(.get, target), .safe)
        if response.status == 410 { return .gone((try? Self.object(response))?["reason"]?.stringValue.flatMap(AnchorGone.init)) }
        guard response.status == 200 else { throw Self.refusal(response) }
        guard let page = FeedPage(try Self.object(response)) else {
            throw ClientError.badAnswer("a feed page without messages, deleted, anchor or hasMore, or with a malformed entry")
        }
        return .page(page)
    }
}

/// Where `catchUp(from:)` ended.
///
/// Frozen on purpose: a read of the feed either reaches its end or meets a
/// 410; every other answer throws. What may grow, the 410's reasons, is an
/// extensible kind (`Reason`).
@frozen
public enum CatchUp: Sendable, Equatable {
    /// Why the server cannot answer from an anchor (the 410's `reason`,
    /// docs/API.md §4). New reasons may come in a minor release: match
    /// with a `default`.
    public typealias Reason = ExtensibleKind<CatchUp>

    /// At the end of the feed now: the anchor to keep.
    case end(Anchor)
    /// 410: the server cannot answer from the anchor, and why (nil: it did
    /// not say; an older server).
    case gone(Reason?)
}

extension ExtensibleKind where Owner == CatchUp {
    /// Compaction dropped deletions the anchor had not seen. The inbox is
    /// the same one: every write it acknowledged is still there, or was
    /// replaced or deleted by a later write.
    public static var compacted: Self { Self(AnchorGone.compacted.rawValue) }
    /// The anchor belongs to another generation of the inbox: restored from
    /// a backup, or wiped and rebuilt. Acknowledged writes may be gone.
    public static var replaced: Self { Self(AnchorGone.replaced.rawValue) }
    /// The anchor is beyond anything the inbox holds: it lost writes it had
    /// acknowledged (its files were put back from an older copy).
    public static var ahead: Self { Self(AnchorGone.ahead.rawValue) }
}

extension BoxClient {
    /// The anchor at the end of the feed now, read from `anchor` onwards
    /// with this device's own writes skipped; or why the server cannot
    /// answer from `anchor` (410). A writer that keeps this anchor learns on
    /// its next run whether acknowledged writes may be gone: `.compacted`
    /// says they are not (the inbox is the same one), `.replaced` and
    /// `.ahead` that they may be.
    public func catchUp(from anchor: Anchor?) async throws -> CatchUp {
        var anchor = anchor
        while true {
            switch try await feedRead(after: anchor, limit: WireLimits.feedPageSizes.upperBound, excludeOwn: configuration.deviceID != nil) {
            case .gone(let reason):
                return .gone(reason.map { CatchUp.Reason($0.rawValue) })
            case .page(let page):
                if !page.hasMore { return .end(page.anchor) }
                anchor = page.anchor
            }
        }
    }
}
