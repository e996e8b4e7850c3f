import MockCloudSystem

/// Optional bearer tokens (`MOCKCLOUD_TOKENS`): a file of SHA-256 hashes of
/// the tokens, one `sha256:<64 hex> [label]` a line, made by
/// `mockcloud-admin token`. The tokens themselves are never stored. A
/// presented token is hashed and compared with every stored hash in
/// constant time (`CRYPTO_memcmp`), and never logged.
///
/// A class, not a struct: `ServiceConfig` holds an optional one, and a nil
/// class reference is a null pointer, while an optional struct costs every
/// CGI process Optional's run-time metadata (commit d6e5fcd: part of a
/// signed GET's 363k -> 263k instructions).
package final class AccessTokens: Sendable {
    /// The stored hashes; empty means "no token can pass".
    let hashes: [[UInt8]]

    package init(hashes: [[UInt8]]) {
        self.hashes = hashes
    }

    /// Reads a token file; a missing, malformed or group/other-readable file
    /// throws a `KeyFileError` that names the problem.
    package static func load(path: String) throws -> AccessTokens {
        try parse(try PrivateFile.read(path, .tokens), path: path)
    }

    /// Parses a token file; `path` is only for error messages.
    package static func parse(_ text: [UInt8], path: String) throws -> AccessTokens {
        var hashes: [[UInt8]] = []
        let prefix = Array("sha256:".utf8)
        try PrivateFile.forEachLine(text) { number, line in
            var fields = ByteFields(text, line, separator: 0x20)
            guard let first = fields.next(), text[first].starts(with: prefix),
                let hash = ASCII.decodeHex(text[(first.lowerBound + prefix.count)..<first.upperBound]),
                hash.count == HMACSHA256.macLength
            else {
                throw KeyFileError.malformed(path: path, line: number, reason: "expected sha256:<64 hex digits> [label]", file: .tokens)
            }
            hashes.append(hash)
        }
        return AccessTokens(hashes: hashes)
    }

    /// True when the token's hash is one of the stored ones. Every stored
    /// hash is compared, whichever matches.
    package func accepts(token: String) -> Bool {
        let digest = HMACSHA256.sha256([Array(token.utf8)])
        var matched = false
        for hash in hashes where HMACSHA256.constantTimeEqual(hash, digest) { matched = true }
        return matched
    }

    /// A new random token (32 bytes, hex) and the line that stores its hash.
    package static func newToken(label: String) -> (token: String, line: String) {
        let token = "mct_" + ASCII.hex(Random.bytes(32))
        let hash = ASCII.hex(HMACSHA256.sha256([Array(token.utf8)]))
        return (token, "sha256:\(hash)" + (label.isEmpty ? "" : " \(label)"))
    }
}
