@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// The inbox change log's 256-byte text records, as a reader finds them on disk
// (a crash or a hand edit can leave anything there).
//
// Input: up to 256 bytes; shorter inputs are padded with spaces and ended
// with a newline to make a record-sized line, longer ones cut. The raw input
// is decoded too. Oracles: no crash; a record or header that decodes
// re-encodes to bytes that decode to the same value (for a header, to the
// very bytes it was read from); a record decodes the same
// at offset 0 and inside a larger buffer (as a page read hands it over).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChangeLog(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = inputBytes(data, size)
    _ = ChangeLog.decodeRecord(raw[...])
    _ = ChangeLog.decodeHeader(raw)

    var line = Array(raw.prefix(ChangeLog.recordSize))
    if line.count < ChangeLog.recordSize {
        line += [UInt8](repeating: 0x20, count: ChangeLog.recordSize - line.count)
        line[ChangeLog.recordSize - 1] = 0x0A
    }
    let record = ChangeLog.decodeRecord(line[...])
    let buffer = ChangeLog.encode(ChangeRecord(seq: 1, deleted: false, live: 1, id: MessageID("z")!)) + line + raw
    let inside = ChangeLog.decodeRecord(buffer[ChangeLog.recordSize..<2 * ChangeLog.recordSize])
    require(inside == record, "\(show(line)) decodes differently inside a buffer")
    if let record {
        require(record.seq > 0 && record.live >= 0, "\(show(line)) decodes to \(record)")
        let encoded = ChangeLog.encode(record)
        require(encoded.count == ChangeLog.recordSize, "\(record) encodes to \(encoded.count) bytes")
        require(ChangeLog.decodeRecord(encoded[...]) == record, "\(record) does not survive encode + decode")
    }
    if let header = ChangeLog.decodeHeader(line) {
        let encoded = ChangeLog.encode(header)
        require(encoded.count == ChangeLog.recordSize, "\(header) encodes to \(encoded.count) bytes")
        require(ChangeLog.decodeHeader(encoded) == header, "\(header) does not survive encode + decode")
        // Fixed offsets, fixed widths: only the canonical text is a header.
        require(encoded == line, "\(show(line)) decodes to \(header), which encodes as \(show(encoded))")
        require(ChangeLog.decodeRecord(line[...]) == nil, "\(show(line)) is both a header and a record")
    }
    return 0
}
