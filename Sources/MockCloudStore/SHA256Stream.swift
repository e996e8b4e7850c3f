internal import COpenSSL
internal import CStartup

/// SHA-256 fed piece by piece (libcrypto's `SHA256_Init/Update/Final`), so
/// that a message made of several parts is hashed without joining them. An
/// HMAC's inner context is derived from the key: the stream cannot be
/// copied, and its context is wiped when it finishes or goes away.
package struct SHA256Stream: ~Copyable {
    private let context: UnsafeMutablePointer<SHA256_CTX>

    /// Inputs from this size on are worth libcrypto's CPU probe (SHA-NI or
    /// AVX2 code instead of the baseline); smaller ones skip it, see
    /// Sources/CStartup/startup.c.
    static let probeThreshold = 64 * 1024

    package init() {
        context = .allocate(capacity: 1)
        context.initialize(to: SHA256_CTX())
        // These calls fail only on a null context, which cannot happen here.
        precondition(SHA256_Init(context) == 1, "SHA256_Init failed")
    }

    deinit {
        OPENSSL_cleanse(context, MemoryLayout<SHA256_CTX>.size)
        context.deallocate()
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count >= Self.probeThreshold { mockcloud_probe_cpu_for_crypto() }
        precondition(SHA256_Update(context, bytes.baseAddress, bytes.count) == 1, "SHA256_Update failed")
    }

    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    package mutating func update(_ text: String) {
        var text = text
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// The digest; the context is wiped.
    package consuming func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        digest.withUnsafeMutableBufferPointer { out in
            precondition(SHA256_Final(out.baseAddress, context) == 1, "SHA256_Final failed")
        }
        return digest
    }
}
