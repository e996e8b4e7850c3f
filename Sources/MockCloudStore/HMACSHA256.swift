internal import COpenSSL
internal import CStartup

/// HMAC-SHA256 (RFC 2104) over libcrypto's SHA-256. The EVP route costs about
/// a millisecond of provider loading on first use in every CGI process; the
/// two-pass construction over `SHA256_Init/Update/Final` costs microseconds
/// and gives the same MACs (the RFC 4231 vectors are in the tests).
package final class HMACSHA256: @unchecked Sendable {
    /// The length of a MAC in bytes.
    package static let macLength = 32
    private static let blockSize = 64

    /// The key padded to a block and XORed with ipad and opad; wiped on deinit.
    private var innerPad: [UInt8]
    private var outerPad: [UInt8]

    /// - Parameter key: the secret; a key longer than a block is hashed first.
    package init(key: [UInt8]) {
        var block = key.count > Self.blockSize ? Self.sha256([key]) : key
        block.append(contentsOf: repeatElement(0, count: Self.blockSize - block.count))
        innerPad = block.map { $0 ^ 0x36 }
        outerPad = block.map { $0 ^ 0x5c }
        Self.wipe(&block)
    }

    deinit {
        Self.wipe(&innerPad)
        Self.wipe(&outerPad)
    }

    /// The MAC of the message `write` feeds to the stream.
    package func authenticationCode(_ write: (inout SHA256Stream) -> Void) -> [UInt8] {
        var inner = SHA256Stream()
        inner.update(innerPad)
        write(&inner)
        var outer = SHA256Stream()
        outer.update(outerPad)
        outer.update(inner.finish())
        return outer.finish()
    }

    /// The MAC of the concatenation of `parts`.
    package func authenticationCode(for parts: [[UInt8]]) -> [UInt8] {
        authenticationCode { stream in
            for part in parts { stream.update(part) }
        }
    }

    /// True when `mac` is the MAC of the message `write` feeds: the length is
    /// checked first, then the bytes are compared in constant time.
    package func isValid(mac: [UInt8], _ write: (inout SHA256Stream) -> Void) -> Bool {
        guard mac.count == Self.macLength else { return false }
        return Self.constantTimeEqual(authenticationCode(write), mac)
    }

    /// True when `mac` is the MAC of the concatenation of `parts`.
    package func isValid(mac: [UInt8], for parts: [[UInt8]]) -> Bool {
        isValid(mac: mac) { stream in
            for part in parts { stream.update(part) }
        }
    }

    /// Equal lengths and equal bytes, compared in time that does not depend
    /// on where they differ (`CRYPTO_memcmp`).
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }

    /// SHA-256 of the concatenation of `parts`.
    package static func sha256(_ parts: [[UInt8]]) -> [UInt8] {
        var stream = SHA256Stream()
        for part in parts { stream.update(part) }
        return stream.finish()
    }

    /// Overwrites key material with zeros in a way the optimiser keeps.
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
        }
    }
}
