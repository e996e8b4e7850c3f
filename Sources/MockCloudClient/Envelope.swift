import MockCloudJSON

/// A stored message as the server keeps it (docs/API.md §4).
public struct Envelope: Sendable, Equatable {
    public var id: MessageID
    /// The writer's sync version (`X-Sync-Version`).
    public var version: Int64
    /// The change's place in the key's feed; a new one for every change.
    public var seq: Int64
    /// The `X-Device-Id` that wrote it, if any.
    public var source: String?
    /// When the server stored it (`20260518T044304.134233Z`).
    public var serverReceivedAt: String
    /// The writer's JSON object, exactly as stored.
    public var body: JSONText

    init(_ value: JSONValue) throws(ClientError) {
        guard let object = value.objectValue,
            let idText = object["id"]?.stringValue, let id = MessageID(idText),
            let version = object["version"].flatMap(Self.integer),
            let seq = object["seq"].flatMap(Self.integer),
            let body = object["body"], body.objectValue != nil
        else { throw .badAnswer("an envelope without id, version, seq or body") }
        self.id = id
        self.version = version
        self.seq = seq
        source = object["source"]?.stringValue
        serverReceivedAt = object["serverReceivedAt"]?.stringValue ?? ""
        self.body = JSONText(body)
    }

    /// A JSON integer that fits in Int64.
    static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let text) = value else { return nil }
        return Int64(text)
    }
}
