import MockCloudJSON
import MockCloudWire

/// A message as stored in `<data>/inbox/<key>/messages/<id>.json`: the
/// wire's envelope and the bytes of its file, which `GET /inbox/<id>` and
/// the feed send as they are instead of printing the envelope again.
package struct StoredEnvelope: Sendable, Equatable {
    /// The message, as the wire carries it.
    package private(set) var envelope: Envelope
    /// The file's bytes: as read, or as printed once the fields were final.
    private var stored: [UInt8]?
    /// The body printed compact, when the writer had it printed already
    /// (`init(…body: PrintedJSON)`): `bytes` splices it in.
    private var printedBody: [UInt8]?

    /// Equal when their envelopes are: the bytes follow from the fields.
    package static func == (a: StoredEnvelope, b: StoredEnvelope) -> Bool { a.envelope == b.envelope }

    /// A message not yet printed.
    package init(_ envelope: Envelope) {
        self.envelope = envelope
    }

    /// A live message whose body is printed already.
    package init(id: MessageID, version: Int64, body: PrintedJSON) {
        self.init(Envelope(id: id, version: version, seq: 0, source: nil, serverReceivedAt: "", body: body.value))
        printedBody = body.compact
    }

    /// Reads a stored envelope; `nil` when the bytes are not one. The feed
    /// splices these bytes into its answer, so they must be one JSON object
    /// and nothing else (no byte order mark).
    package init?(bytes: [UInt8]) {
        guard !bytes.starts(with: [0xEF, 0xBB, 0xBF]),
            case .object(let object)? = try? JSONParser.parse(bytes, maxDepth: JSONParser.storedDocumentMaxDepth),
            let envelope = Envelope(object)
        else { return nil }
        self.init(envelope)
        stored = bytes
    }

    /// The bytes stored on disk: `JSONPrinter.compact(envelope.json)`.
    package var bytes: [UInt8] {
        if let stored { return stored }
        guard let printedBody, envelope.content != nil else { return JSONPrinter.compact(envelope.json) }
        // `body` is the last member: the header's `}` becomes `, "body": <body>}`.
        var out = JSONPrinter.compact(.object(envelope.header))
        out.removeLast()
        out.append(contentsOf: #", "body": "#.utf8)
        out.append(contentsOf: printedBody)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Makes the fields a change sets final (its `seq`, the writer's
    /// `source`, the server's time) and prints the file's bytes, for the
    /// file and the answer; the printed body is then part of them and is
    /// let go (a bulk of 8 MiB would otherwise hold each body three times).
    package mutating func stamp(seq: Int64, source: DeviceID?, receivedAt: String) {
        envelope.seq = seq
        envelope.sourceText = source?.rawValue
        envelope.serverReceivedAt = receivedAt
        stored = nil
        stored = bytes
        printedBody = nil
    }
}

/// A feed page as the store reads it: the wire's `FeedPage`, each message
/// with its stored bytes, which the answer splices in as they are.
package struct StoredFeedPage: Sendable {
    /// New or changed messages, oldest change first.
    package var messages: [StoredEnvelope]
    package var deleted: [Deletion]
    package var anchor: Anchor
    package var hasMore: Bool

    package init(messages: [StoredEnvelope], deleted: [Deletion], anchor: Anchor, hasMore: Bool) {
        self.messages = messages
        self.deleted = deleted
        self.anchor = anchor
        self.hasMore = hasMore
    }

    /// The page as the wire's type (tests and tools).
    package var page: FeedPage {
        FeedPage(messages: messages.map { $0.envelope }, deleted: deleted, anchor: anchor, hasMore: hasMore)
    }

    /// `{"messages": [...], "deleted": [...], "anchor": "...", "hasMore": ...}`
    /// as Python's `json.dumps` prints it; each message is spliced in as the
    /// bytes stored on disk (already parsed, so known to be an envelope).
    package var bytes: [UInt8] {
        var out = Array(#"{"messages": ["#.utf8)
        for (i, message) in messages.enumerated() {
            if i > 0 { out += Array(", ".utf8) }
            out += message.bytes
        }
        out += Array(#"], "deleted": ["#.utf8)
        for (i, deletion) in deleted.enumerated() {
            if i > 0 { out += Array(", ".utf8) }
            out += Array(#"{"id": ""#.utf8)
            out += Array(deletion.id.rawValue.utf8)  // the id's alphabet needs no escapes
            out += Array(#"", "seq": "#.utf8)
            ASCII.appendDecimal(Int(deletion.seq), to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out += Array(#"], "anchor": "#.utf8)
        JSONPrinter.writeString(anchor.description, into: &out)
        out += Array((hasMore ? #", "hasMore": true}"# : #", "hasMore": false}"#).utf8)
        return out
    }
}
