@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// Feed anchors, `<generation>.<epoch>.<seq>`, as a client passes them back.
//
// Input: an anchor text. Oracles: the parser accepts exactly 1-16 lowercase
// hex digits, a dot, 1-18 digits, a dot, 1-18 digits; an accepted anchor
// prints to a text that parses to the same anchor.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAnchor(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    let text = String(decoding: bytes, as: UTF8.self)
    let anchor = Anchor(text)
    require((anchor != nil) == wellFormed(Array(text.utf8)),
            "Anchor(\(show(text))) is \(anchor.map(\.description) ?? "nil"), the grammar says otherwise")
    if let anchor {
        require(Anchor(anchor.description) == anchor, "\(show(text)) prints as \(anchor.description), which parses otherwise")
        require(anchor.epoch >= 0 && anchor.seq >= 0, "\(show(text)) has a negative field")
    }
    return 0
}

/// The grammar, independently of `Anchor`.
private func wellFormed(_ bytes: [UInt8]) -> Bool {
    let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard parts.count == 3 else { return false }
    let hex = parts[0].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    let digits = { (part: ArraySlice<UInt8>) in (1...18).contains(part.count) && part.allSatisfy { (0x30...0x39).contains($0) } }
    return (1...16).contains(parts[0].count) && hex && digits(parts[1]) && digits(parts[2])
}
