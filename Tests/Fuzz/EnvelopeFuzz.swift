@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// Stored inbox messages, `<data>/inbox/<key>/messages/<id>.json`, as a reader
// finds them (written by us, by an older version, or edited by hand).
//
// Input: a file's bytes. Oracles:
// - an envelope that reads prints (as a write would store it) to bytes that
//   read back to the same envelope and print the same again;
// - a tombstone has no body and a live message an object body
//   (`FUZZ_SKIP=envelope-body` switches this off);
// - a feed page that splices the envelope's stored bytes in is valid JSON
//   (`FUZZ_SKIP=envelope-splice` switches this off) and lists the same envelope.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    guard let stored = StoredEnvelope(bytes: bytes) else { return 0 }
    let envelope = stored.envelope
    if let body = envelope.content, body.objectValue == nil {
        // Its printed form (no "deleted", a body that is not an object) cannot read back.
        require(false, "a live message whose body is not an object, from \(show(bytes))", finding: "envelope-body")
        return 0
    }
    let printed = JSONPrinter.compact(envelope.json)
    guard let again = StoredEnvelope(bytes: printed)?.envelope else {
        require(false, "\(show(bytes)) reads, but its printed form \(show(printed)) does not")
        return 0
    }
    require(again == envelope, "\(show(bytes)) reads back as another envelope from \(show(printed))")
    require(JSONPrinter.compact(again.json) == printed, "\(show(printed)) prints differently the second time")
    require(stored.bytes == bytes, "an envelope read from disk does not keep its stored bytes")

    if !envelope.isTombstone {
        let page = StoredFeedPage(messages: [stored], deleted: [], anchor: .beginning, hasMore: false)
        let text = page.bytes
        let listed = try? JSONParser.parse(text, maxDepth: JSONParser.storedDocumentMaxDepth)
        require(listed != nil, "a feed page with \(show(bytes)) spliced in is not JSON: \(show(text))", finding: "envelope-splice")
        if let listed, case .array(let messages)? = listed.objectValue?["messages"], let first = messages.first {
            let shown = JSONPrinter.compact(first)
            require(StoredEnvelope(bytes: shown)?.envelope == envelope, "a feed page lists \(show(bytes)) as \(show(shown))")
        }
    }
    return 0
}
