@testable import MockCloudCore

// Stored inbox messages, `<data>/inbox/<key>/messages/<id>.json`, as a reader
// finds them (written by us, by an older version, or edited by hand).
//
// Input: a file's bytes. Oracles: an envelope that reads prints to bytes that
// read back to the same envelope and print the same again; a tombstone has
// no body and a live message an object body (`FUZZ_SKIP=envelope-body`
// switches that last check off).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    guard let envelope = Envelope(bytes: bytes) else { return 0 }
    if let body = envelope.body, body.objectValue == nil {
        // Its printed form (no "deleted", a body that is not an object) cannot read back.
        require(false, "a live message whose body is not an object, from \(show(bytes))", finding: "envelope-body")
        return 0
    }
    let stored = envelope.bytes
    guard let again = Envelope(bytes: stored) else {
        require(false, "\(show(bytes)) reads, but its printed form \(show(stored)) does not")
        return 0
    }
    require(again == envelope, "\(show(bytes)) reads back as another envelope from \(show(stored))")
    require(again.bytes == stored, "\(show(stored)) prints differently the second time")
    _ = envelope.json
    _ = envelope.deletionJSON
    return 0
}
