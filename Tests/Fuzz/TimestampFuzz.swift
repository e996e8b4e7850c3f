@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// Client time stamps (`updatedAt`) and the server's own format.
//
// Input: a time stamp text. Oracles:
// - a text that parses names an instant from 0001-01-01 to 9999-12-31 UTC,
//   the years of Python's datetime (`FUZZ_SKIP=timestamp-range` switches
//   this off);
// - a text that parses formats (basic form, UTC, microseconds) to a text that
//   parses back to the same instant;
// - any instant in those years (taken from the input's first 8 bytes)
//   survives format then parse.

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in microseconds
/// (Python: `datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()`).
private let firstInstant: Int64 = -62_135_596_800 * 1_000_000
private let lastInstant: Int64 = 253_402_300_800 * 1_000_000 - 1

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimestamp(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    let text = String(decoding: bytes, as: UTF8.self)
    if let instant = Timestamp.parse(text) {
        require(instant >= firstInstant && instant <= lastInstant,
                "\(show(text)) parses to \(instant), outside 0001-01-01T00:00:00Z...9999-12-31T23:59:59.999999Z, "
                + "which formats as \(show(Timestamp.format(instant)))", finding: "timestamp-range")
        let formatted = Timestamp.format(instant)
        let again = Timestamp.parse(formatted)
        require(again == instant || skipping("timestamp-range") && !(firstInstant...lastInstant).contains(instant),
                "\(show(text)) parses to \(instant), which formats as \(show(formatted)), which parses to \(String(describing: again))")
    }
    if bytes.count >= 8 {
        var raw: UInt64 = 0
        for byte in bytes.prefix(8) { raw = raw << 8 | UInt64(byte) }
        let span = UInt64(lastInstant - firstInstant) + 1
        let instant = firstInstant + Int64(raw % span)
        let formatted = Timestamp.format(instant)
        require(formatted.utf8.count == 23, "\(instant) formats as \(show(formatted))")
        require(Timestamp.parse(formatted) == instant, "\(instant) formats as \(show(formatted)), which does not parse back")
    }
    return 0
}
