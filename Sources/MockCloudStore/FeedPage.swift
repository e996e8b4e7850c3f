import MockCloudJSON

/// One page of the anchored change feed.
package struct FeedPage: Sendable, Equatable {
    package var messages: [Envelope]
    package var deleted: [Envelope]
    package var anchor: Anchor
    package var hasMore: Bool

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
        for (i, tombstone) in deleted.enumerated() {
            if i > 0 { out += Array(", ".utf8) }
            out += JSONPrinter.compact(tombstone.deletionJSON)
        }
        out += Array(#"], "anchor": "#.utf8)
        JSONPrinter.writeString(anchor.description, into: &out)
        out += Array((hasMore ? #", "hasMore": true}"# : #", "hasMore": false}"#).utf8)
        return out
    }
}
