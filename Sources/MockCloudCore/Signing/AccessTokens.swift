import Glibc

/// Why a request may not go on, when bearer tokens are required.
package enum AccessError: HTTPResponseError, Equatable {
    case missingToken
    case tokenNotAccepted

    package var status: Int { self == .missingToken ? 401 : 403 }

    package var message: String {
        switch self {
        case .missingToken: return "Authorization: Bearer <token> required"
        case .tokenNotAccepted: return "bearer token not accepted"
        }
    }

    package var extraHeaders: [(String, String)] {
        self == .missingToken ? [("WWW-Authenticate", "Bearer realm=\"mockcloud\"")] : []
    }
}

/// Optional bearer tokens (`MOCKCLOUD_TOKENS`): a file of SHA-256 hashes of
/// the tokens, one `sha256:<64 hex> [label]` a line, made by
/// `mockcloud-admin token`. The tokens themselves are never stored. A
/// presented token is hashed and compared with every stored hash in
/// constant time (`CRYPTO_memcmp`), and never logged.
package final class AccessTokens: Sendable {
    /// The stored hashes; empty means "no token can pass".
    let hashes: [[UInt8]]

    package init(hashes: [[UInt8]]) {
        self.hashes = hashes
    }

    /// `nil` when `MOCKCLOUD_TOKENS` is not set (access is open, as in the
    /// Python service); a missing, malformed or group/other-readable file is
    /// a 500 that names the problem.
    package static func load(environment: CGIEnvironment) throws -> AccessTokens? {
        guard let path = environment["MOCKCLOUD_TOKENS"], !path.isEmpty else { return nil }
        let text = try PrivateFile.read(path, what: "token file")
        return try parse(text, path: path)
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
                throw KeyFileError.malformed(path: path, line: number, reason: "expected sha256:<64 hex digits> [label]", what: "token file")
            }
            hashes.append(hash)
        }
        return AccessTokens(hashes: hashes)
    }

    /// Checks `Authorization: Bearer <token>`.
    package func authorize(_ request: CGIRequest) throws {
        guard let header = request.header("Authorization"), !header.isEmpty else { throw AccessError.missingToken }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw AccessError.missingToken }
        guard accepts(token: parts[1].trimmingSpaces()) else { throw AccessError.tokenNotAccepted }
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
