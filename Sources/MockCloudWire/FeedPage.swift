import MockCloudJSON

/// A deletion in the feed: the id, and the seq of the change that removed it.
public struct Deletion: Sendable, Equatable {
    public var id: MessageID
    public var seq: Int64

    public init(id: MessageID, seq: Int64) {
        self.id = id
        self.seq = seq
    }
}

/// One page of the anchored change feed (`GET /inbox`, docs/API.md §4).
/// The server prints it from the stored messages (`StoredFeedPage`).
public struct FeedPage: Sendable, Equatable {
    /// New or changed messages, oldest change first.
    public var messages: [Envelope]
    /// Messages deleted after the anchor, oldest first.
    public var deleted: [Deletion]
    /// Where the next read starts.
    public var anchor: Anchor
    /// False on the last page.
    public var hasMore: Bool

    package init(messages: [Envelope], deleted: [Deletion], anchor: Anchor, hasMore: Bool) {
        self.messages = messages
        self.deleted = deleted
        self.anchor = anchor
        self.hasMore = hasMore
    }

    /// A page as the server sent it; `nil` when the object is not one.
    package init?(_ object: JSONObject) {
        guard case .array(let messages)? = object["messages"], case .array(let deleted)? = object["deleted"],
            case .string(let anchorText)? = object["anchor"], let anchor = Anchor(anchorText),
            case .bool(let hasMore)? = object["hasMore"]
        else { return nil }
        var page = FeedPage(messages: [], deleted: [], anchor: anchor, hasMore: hasMore)
        page.messages.reserveCapacity(messages.count)
        for message in messages {
            guard case .object(let members) = message, let envelope = Envelope(members), !envelope.isTombstone
            else { return nil }
            page.messages.append(envelope)
        }
        for item in deleted {
            guard case .object(let members) = item, case .string(let text)? = members["id"], let id = MessageID(text),
                case .number(let digits)? = members["seq"], let seq = Int64(digits)
            else { return nil }
            page.deleted.append(Deletion(id: id, seq: seq))
        }
        self = page
    }
}
