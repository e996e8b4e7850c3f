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
}
