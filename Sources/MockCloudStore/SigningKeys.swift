import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// The keys of `MOCKCLOUD_HMAC_KEYS`: one `key-id:secret` a line, the first
/// signs, all verify (rotation). A secret is hex (`openssl rand -hex 32`) when
/// it is all hex digits, else standard base64 (`openssl rand -base64 32`); it
/// must decode to at least 32 bytes. Blank lines and `#` comments are ignored.
package struct SigningKeys: Sendable {
    /// A key id and its MAC function.
    package struct Key: Sendable {
        package let id: String
        package let hmac: HMACSHA256
    }

    /// The key new documents are signed with.
    package let current: Key
    /// The keys that only verify, in the file's order; usually none, and an
    /// empty array costs a CGI process nothing at start.
    package let older: [Key]

    /// The shortest secret accepted, in bytes.
    package static let minimumSecretLength = 32

    /// The signing key first, then the older ones.
    package var keys: [Key] { [current] + older }

    package func key(id: String) -> Key? {
        current.id == id ? current : older.first { $0.id == id }
    }

    package init(current: Key, older: [Key] = []) {
        self.current = current
        self.older = older
    }

    /// Loads and checks a key file: mode 0600 or stricter, well formed.
    package static func load(path: String) throws -> SigningKeys {
        var text = try PrivateFile.read(path, .hmacKeys)
        defer { HMACSHA256.wipe(&text) }
        return try parse(text, path: path)
    }

    /// Parses key file text; `path` is only for the error messages.
    package static func parse(_ text: [UInt8], path: String) throws -> SigningKeys {
        var current: Key?
        var older: [Key] = []
        try PrivateFile.forEachLine(text) { lineNumber, line in
            guard let colon = text[line].firstIndex(of: UInt8(ascii: ":")) else {
                throw KeyFileError.malformed(path: path, line: lineNumber, reason: "expected key-id:secret")
            }
            let id = String(decoding: text[line.lowerBound..<colon], as: UTF8.self)
            guard Identifier.matches(id, maxLength: 64, extra: "._-") else {
                throw KeyFileError.malformed(
                    path: path, line: lineNumber, reason: "key id must be 1-64 letters, digits, '.', '_' or '-'")
            }
            if current?.id == id || older.contains(where: { $0.id == id }) {
                throw KeyFileError.malformed(path: path, line: lineNumber, reason: "key id \(id) appears twice")
            }
            var encoded = Array(text[(colon + 1)..<line.upperBound])
            defer { HMACSHA256.wipe(&encoded) }
            guard var secret = Self.decodeSecret(encoded) else {
                throw KeyFileError.malformed(
                    path: path, line: lineNumber, reason: "secret of key \(id) is neither hex nor base64")
            }
            defer { HMACSHA256.wipe(&secret) }
            guard secret.count >= minimumSecretLength else {
                throw KeyFileError.malformed(
                    path: path, line: lineNumber,
                    reason: "secret of key \(id) is \(secret.count) bytes; at least \(minimumSecretLength) are needed")
            }
            let key = Key(id: id, hmac: HMACSHA256(key: secret))
            if current == nil { current = key } else { older.append(key) }
        }
        guard let current else { throw KeyFileError.noKeys(path: path) }
        return SigningKeys(current: current, older: older)
    }

    /// Hex when every character is a hex digit (and the count is even), else base64.
    static func decodeSecret(_ text: [UInt8]) -> [UInt8]? {
        if !text.isEmpty, text.count % 2 == 0, text.allSatisfy({ ASCII.hexValue($0) != nil }) {
            return ASCII.decodeHex(text[...])
        }
        return ASCII.decodeBase64(text)
    }
}
