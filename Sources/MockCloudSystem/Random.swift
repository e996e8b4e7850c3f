import Glibc

/// Random bytes from the kernel (`getentropy(3)`, at most 256 bytes a call).
package enum Random {
    package static func bytes(_ count: Int) -> [UInt8] {
        precondition(count <= 256)
        var out = [UInt8](repeating: 0, count: count)
        let result = out.withUnsafeMutableBytes { getentropy($0.baseAddress!, count) }
        precondition(result == 0, "getentropy failed: \(errno)")
        return out
    }

    /// A random (version 4) UUID in lowercase, e.g. for `POST /inbox`.
    package static func uuid() -> String {
        var b = bytes(16)
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { ASCII.hex(Array(b[$0])) }.joined(separator: "-")
    }
}
