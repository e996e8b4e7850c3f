import Glibc

// Shared by every libFuzzer target in this folder: each target is this file,
// its own `<Name>Fuzz.swift` and the library, built by Tests/Fuzz/build.sh.

/// The fuzzer's input as an array.
func inputBytes(_ data: UnsafePointer<UInt8>, _ size: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: data, count: size))
}

/// `FUZZ_SKIP=tag,tag`: the oracles of known, reported findings (named in
/// Tests/Fuzz/RESULTS.md) that are not checked, so that a long run can go on
/// past them until they are fixed. Unset by `run.sh` and `make fuzz`.
private let skippedFindings = Set((getenv("FUZZ_SKIP").map { String(cString: $0) } ?? "").split(separator: ",").map(String.init))

/// True when the oracle of finding `tag` is switched off by `FUZZ_SKIP`.
func skipping(_ tag: String) -> Bool { skippedFindings.contains(tag) }

/// An oracle: when `condition` is false, says why on stderr and aborts, which
/// libFuzzer reports as a crash and saves the input as an artifact. `finding`
/// names a known finding whose check `FUZZ_SKIP` may switch off.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, finding: String? = nil,
    file: StaticString = #fileID, line: UInt = #line
) {
    if let finding, skipping(finding) { return }
    if condition() { return }
    let text = Array("FUZZ CHECK FAILED (\(file):\(line)): \(message())\n".utf8)
    text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    abort()
}

/// Bytes as readable text for the messages above (JSON-escaped, so that
/// control characters and invalid UTF-8 stay visible).
func show(_ bytes: [UInt8]) -> String {
    var out = "\""
    for byte in bytes {
        switch byte {
        case 0x22: out += "\\\""
        case 0x5C: out += "\\\\"
        case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            let hex = Array("0123456789abcdef")
            out += "\\x" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
        }
    }
    return out + "\""
}

func show(_ text: String) -> String { show(Array(text.utf8)) }
