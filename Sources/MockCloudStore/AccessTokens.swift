import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// Optional bearer tokens (`MOCKCLOUD_TOKENS`): a file of SHA-256 hashes of
/// the tokens, one `sha256:<64 hex> [label] [keys=KEY,KEY...]` a line, made
/// by `mockcloud-admin token`. A token with `keys=` may use only those
/// user keys; one without (every line written before scopes existed)
/// may use every key. The tokens themselves are never stored. A
/// presented token is hashed and compared with every stored hash in
/// constant time (`CRYPTO_memcmp`), and never logged.
///
/// A class, not a struct: `ServiceConfig` holds an optional one, and a nil
/// class reference is a null pointer, while an optional struct makes every
/// CGI process build Optional's run-time metadata.
package final class AccessTokens: Sendable {
    /// One stored token: the SHA-256 of the token, and the user keys it
    /// may use (`nil`: every key).
    package struct Entry: Sendable, Equatable {
        package let hash: [UInt8]
        package let keys: [UserKey]?

        package init(hash: [UInt8], keys: [UserKey]? = nil) {
            self.hash = hash
            self.keys = keys
        }
    }

    /// The stored tokens; empty means "no token can pass".
    package let entries: [Entry]

    package init(entries: [Entry]) {
        self.entries = entries
    }

    /// The stored hashes, in the file's order.
    package var hashes: [[UInt8]] { entries.map(\.hash) }

    /// Tokens that may use every key.
    package convenience init(hashes: [[UInt8]]) {
        self.init(entries: hashes.map { Entry(hash: $0) })
    }

    /// Reads a token file; a missing, malformed or group/other-readable file
    /// throws a `KeyFileError` that names the problem.
    package static func load(path: String) throws -> AccessTokens {
        try parse(try PrivateFile.read(path, .tokens), path: path)
    }

    /// Parses a token file; `path` is only for error messages.
    package static func parse(_ text: [UInt8], path: String) throws -> AccessTokens {
        var entries: [Entry] = []
        let prefix = Array("sha256:".utf8)
        let keysPrefix = Array("keys=".utf8)
        try PrivateFile.forEachLine(text) { number, line in
            var fields = ByteFields(text, line, separator: 0x20)
            guard let first = fields.next(), text[first].starts(with: prefix),
                let hash = ASCII.decodeHex(text[(first.lowerBound + prefix.count)..<first.upperBound]),
                hash.count == HMACSHA256.macLength
            else {
                throw KeyFileError.malformed(
                    path: path, line: number, reason: "expected sha256:<64 hex digits> [label] [keys=KEY,KEY...]", file: .tokens)
            }
            var keys: [UserKey]?
            while let field = fields.next() {
                guard text[field].starts(with: keysPrefix) else { continue }  // the label
                let list = String(decoding: text[(field.lowerBound + keysPrefix.count)..<field.upperBound], as: UTF8.self)
                let named = list.split(separator: ",", omittingEmptySubsequences: false).map { UserKey(String($0)) }
                guard keys == nil, !named.isEmpty, !named.contains(nil) else {
                    throw KeyFileError.malformed(
                        path: path, line: number, reason: "keys= takes one comma-separated list of user keys", file: .tokens)
                }
                keys = named.compactMap { $0 }
            }
            entries.append(Entry(hash: hash, keys: keys))
        }
        return AccessTokens(entries: entries)
    }

    /// The stored token whose hash is the token's; `nil` when none is.
    /// Every stored hash is compared, whichever matches.
    package func entry(for token: String) -> Entry? {
        let digest = HMACSHA256.sha256([Array(token.utf8)])
        var matched: Entry?
        for entry in entries where HMACSHA256.constantTimeEqual(entry.hash, digest) { matched = entry }
        return matched
    }

    /// True when the token's hash is one of the stored ones.
    package func accepts(token: String) -> Bool { entry(for: token) != nil }

    /// A new random token (32 bytes, hex) and the line that stores its hash;
    /// with `keys`, the token may use only those user keys.
    package static func newToken(label: String, keys: [UserKey]? = nil) -> (token: String, line: String) {
        let token = "mct_" + ASCII.hex(Random.bytes(32))
        let hash = ASCII.hex(HMACSHA256.sha256([Array(token.utf8)]))
        var line = "sha256:\(hash)" + (label.isEmpty ? "" : " \(label)")
        if let keys { line += " keys=" + keys.map(\.rawValue).joined(separator: ",") }
        return (token, line)
    }
}
