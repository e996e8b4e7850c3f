import MockCloudJSON

/// A deletion in the feed.
public struct Deletion: Sendable, Equatable {
    public var id: MessageID
    public var seq: Int64
}

/// One page of changes. Apply `messages` (insert or replace by id) and
/// `deleted` (remove by id), then save `anchor` with them, in that order
/// (README, "Keeping an anchor"). During a full read, save the anchor only
/// with the last page, after dropping what `liveIDs` leaves out: a read
/// broken off half-way then starts again from the beginning.
public struct FeedPage: Sendable {
    /// New or changed messages, oldest change first. Never one the sequence
    /// already handed out at the same version and seq.
    public var messages: [Envelope]
    public var deleted: [Deletion]
    /// Where the next read starts.
    public var anchor: Anchor
    /// False on the last page.
    public var hasMore: Bool
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
}

/// `changes(since:)`: pages until the feed is exhausted (`hasMore` false).
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = FeedPage
    let client: MockCloudClient
    let anchor: Anchor?
    let pageSize: Int
    let excludeOwn: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, anchor: anchor, pageSize: pageSize, excludeOwn: excludeOwn)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let client: MockCloudClient
        var anchor: Anchor?
        let pageSize: Int
        let excludeOwn: Bool
        var finished = false
        var fullRead: Bool
        var resyncPending = false
        /// What this sequence handed out: id → (version, seq).
        var delivered: [MessageID: (Int64, Int64)] = [:]
        /// During a full read: the ids seen so far, live at the last look.
        var live: Set<MessageID> = []

        init(client: MockCloudClient, anchor: Anchor?, pageSize: Int, excludeOwn: Bool) {
            self.client = client
            self.anchor = anchor
            self.pageSize = pageSize
            self.excludeOwn = excludeOwn
            fullRead = anchor == nil
        }

        /// The next page, asked for as soon as this one's anchor was known:
        /// its round trip overlaps the caller's work on this page.
        var prefetch: Task<FeedPage?, any Error>?

        public mutating func next() async throws -> FeedPage? {
            guard !finished else { return nil }
            var answer: FeedPage?
            if let prefetch {
                answer = try await prefetch.value
                self.prefetch = nil
            } else {
                answer = try await client.feedPage(after: anchor, limit: pageSize, excludeOwn: excludeOwn && !fullRead)
            }
            if answer == nil {
                // 410: start again from nothing, without exclude-source (the
                // device's own messages are part of the state to rebuild).
                guard anchor != nil || !fullRead else {
                    throw ClientError.badAnswer("a read without an anchor answered 410")
                }
                anchor = nil
                fullRead = true
                resyncPending = true
                live = []
                answer = try await client.feedPage(after: nil, limit: pageSize, excludeOwn: false)
                guard answer != nil else { throw ClientError.badAnswer("a read without an anchor answered 410") }
            }
            guard var page = answer else { return nil }
            anchor = page.anchor
            page.isFullRead = fullRead
            page.startsResync = resyncPending
            resyncPending = false
            var fresh: [Envelope] = []
            for message in page.messages {
                if fullRead { live.insert(message.id) }
                if let seen = delivered[message.id], seen == (message.version, message.seq) { continue }
                delivered[message.id] = (message.version, message.seq)
                fresh.append(message)
            }
            page.messages = fresh
            for deletion in page.deleted {
                delivered[deletion.id] = nil
                if fullRead { live.remove(deletion.id) }
            }
            if !page.hasMore {
                finished = true
                if fullRead { page.liveIDs = live }
            } else {
                let (client, next, limit, exclude) = (client, page.anchor, pageSize, excludeOwn && !fullRead)
                prefetch = Task { try await client.feedPage(after: next, limit: limit, excludeOwn: exclude) }
            }
            return page
        }
    }
}

extension MockCloudClient {
    /// The feed after `anchor` (nil: from the beginning), page by page.
    /// Incremental reads skip this device's own writes (`exclude-source`)
    /// when `excludingOwnWrites` and a device id is configured; full reads
    /// never do. On a 410 it starts again from no anchor and says so
    /// (`FeedPage.startsResync`), never handing out the same id at the same
    /// version and seq twice.
    public func changes(since anchor: Anchor?, pageSize: Int = 1000, excludingOwnWrites: Bool = true) -> ChangeFeed {
        ChangeFeed(client: self, anchor: anchor, pageSize: min(max(pageSize, 1), 1000),
                   excludeOwn: excludingOwnWrites && configuration.deviceID != nil)
    }

    /// One `GET /inbox` page; nil for 410.
    func feedPage(after anchor: Anchor?, limit: Int, excludeOwn: Bool) async throws(ClientError) -> FeedPage? {
        var target = "/inbox?limit=\(limit)"
        if let anchor { target += "&anchor=" + anchor.rawValue }
        if excludeOwn, let device = configuration.deviceID { target += "&exclude-source=" + device.rawValue }
        let response = try await exchange(HTTPRequest(method: "GET", target: target), .safe)
        if response.status == 410 { return nil }
        guard response.status == 200 else { throw Self.refusal(response) }
        let object = try Self.object(response)
        guard case .array(let messages)? = object["messages"], case .array(let deleted)? = object["deleted"],
            let anchorText = object["anchor"]?.stringValue, let next = Anchor(anchorText),
            case .bool(let hasMore)? = object["hasMore"]
        else { throw .badAnswer("a feed page without messages, deleted, anchor or hasMore") }
        var page = FeedPage(messages: [], deleted: [], anchor: next, hasMore: hasMore, isFullRead: false,
                            startsResync: false, liveIDs: nil)
        page.messages.reserveCapacity(messages.count)
        for message in messages { page.messages.append(try Envelope(message)) }
        for item in deleted {
            guard let object = item.objectValue, let text = object["id"]?.stringValue, let id = MessageID(text),
                let seq = object["seq"].flatMap(Envelope.integer)
            else { throw .badAnswer("a deletion without id or seq") }
            page.deleted.append(Deletion(id: id, seq: seq))
        }
        return page
    }
}

extension MockCloudClient {
    /// The anchor at the end of the feed now, read from `anchor` onwards
    /// with this device's own writes skipped; nil when the server cannot
    /// answer from `anchor` (410: the inbox was restored or rebuilt, or
    /// deletions after it were compacted away). A writer that keeps this
    /// anchor learns on its next run that acknowledged writes may be gone.
    public func catchUp(from anchor: Anchor?) async throws(ClientError) -> Anchor? {
        var anchor = anchor
        while true {
            guard let page = try await feedPage(after: anchor, limit: 1000, excludeOwn: configuration.deviceID != nil)
            else { return nil }
            anchor = page.anchor
            if !page.hasMore { return page.anchor }
        }
    }
}
