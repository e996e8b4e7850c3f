import MockCloudJSON

/// A message as the feed and `GET /inbox/<id>` send it (docs/API.md §4):
/// the envelope of a live message, or the tombstone a deletion leaves. (The
/// server's store keeps each in a file of these bytes: `StoredEnvelope`.)
public struct Envelope: Sendable, Equatable {
    public var id: MessageID
    /// The writer's sync version (`X-Sync-Version`); the server keeps the highest.
    public var version: Int64
    /// The change's place in the key's feed; a new one for every change.
    public var seq: Int64
    /// The device that wrote it (`X-Device-Id`), if it named itself.
    public var source: DeviceID? { sourceText.flatMap(DeviceID.init) }
    /// `source` as stored: kept as written, so that an envelope is printed
    /// back byte for byte even when its source predates the id's shape.
    package var sourceText: String?
    /// When the server stored it (`20260518T044304.134233Z`).
    public var serverReceivedAt: String
    /// The writer's JSON object, kept intact; `nil` for a tombstone.
    package var content: JSONValue?

    /// The writer's JSON object in its compact form; `nil` for a tombstone.
    public var body: JSONText? { content.map(JSONText.init) }
    /// True for the tombstone of a deleted message.
    public var isTombstone: Bool { content == nil }

    /// `{"id", "version", "seq", "source", "serverReceivedAt", "body"}`, or for
    /// a tombstone `{"id", "version", "seq", "source", "serverReceivedAt", "deleted": true}`.
    package var json: JSONValue {
        var object = header
        if let content { object["body"] = content } else { object["deleted"] = .bool(true) }
        return .object(object)
    }

    /// The members before `body` or `deleted`.
    package var header: JSONObject {
        var object = JSONObject()
        object["id"] = .string(id.rawValue)
        object["version"] = .number(String(version))
        object["seq"] = .number(String(seq))
        object["source"] = sourceText.map(JSONValue.string) ?? .null
        object["serverReceivedAt"] = .string(serverReceivedAt)
        return object
    }

    package init(id: MessageID, version: Int64, seq: Int64, source: String?, serverReceivedAt: String, body: JSONValue?) {
        self.id = id
        self.version = version
        self.seq = seq
        self.sourceText = source
        self.serverReceivedAt = serverReceivedAt
        content = body
    }

    /// Reads an envelope's members, as stored or as a feed page sends them;
    /// `nil` when they are not one: `id`, `version`, `seq` and
    /// `serverReceivedAt` of their types, and an object `body` for a live
    /// message or `"deleted": true` and no body for a tombstone.
    package init?(_ object: JSONObject) {
        // One pass over the members (their keys are unique), not a lookup per
        // field: each lookup is a call into MockCloudJSON, and a feed page
        // reads ten envelopes. No key other than these ASCII names is `==`
        // to one of them (no character decomposes to these letters).
        var id: MessageID?, version: Int64?, seq: Int64?, received: String?, source: String?
        var body: JSONValue?
        var deleted = false
        for member in object.members {
            switch member.key {
            case "id": if case .string(let text) = member.value { id = MessageID(text) }
            case "version": if case .number(let text) = member.value { version = Int64(text) }
            case "seq": if case .number(let text) = member.value { seq = Int64(text) }
            case "serverReceivedAt": if case .string(let text) = member.value { received = text }
            case "source": if case .string(let text) = member.value { source = text }
            case "body": body = member.value
            case "deleted": deleted = member.value == .bool(true)
            default: continue
            }
        }
        guard let id, let version, let seq, let received else { return nil }
        // A live message has an object body; a tombstone has none.
        if deleted {
            guard body == nil else { return nil }
        } else {
            guard case .object? = body else { return nil }
        }
        self.init(id: id, version: version, seq: seq, source: source, serverReceivedAt: received, body: body)
    }
}
