@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// The private files: the HMAC key file (`MOCKCLOUD_HMAC_KEYS`: `key-id:secret`
// lines, hex or base64 secrets of at least 32 bytes) and the token file
// (`MOCKCLOUD_TOKENS`: `sha256:<64 hex> [label]` lines), both with comments
// and blank lines.
//
// Input: a file's text, parsed as both. Oracles: a key file that loads has
// unique, well-shaped ids and keys that verify their own MACs; an error never
// quotes a secret; a token file that loads holds 32-byte hashes, one for each
// meaningful line, and accepts a token exactly when its hash is listed.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSigningKeys(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    do {
        let keys = try SigningKeys.parse(bytes, path: "/fuzz/keys")
        let ids = keys.keys.map(\.id)
        require(!ids.isEmpty, "no keys but no error")
        require(Set(ids).count == ids.count, "duplicate key ids \(ids)")
        for id in ids {
            require(Identifier.matches(id, maxLength: 64, extra: "._-"), "key id \(show(id))")
            require(keys.key(id: id) != nil, "key \(show(id)) cannot be found by id")
        }
        let mac = keys.current.hmac.authenticationCode(for: [bytes])
        require(mac.count == HMACSHA256.macLength, "MAC of \(mac.count) bytes")
        require(keys.current.hmac.isValid(mac: mac, for: [bytes]), "a key does not verify its own MAC")
    } catch let error as KeyFileError {
        // Text an error may show on its own: the path, the key ids and the
        // sentences of KeyFile.swift. A secret that is part of them proves nothing.
        let lines = bytes.split(separator: 0x0A)
        var shown = lines.compactMap { line in line.firstIndex(of: UInt8(ascii: ":")).map { Array(line[..<$0]) } }
        shown += ["/fuzz/keys", "HMAC key file", "expected key-id:secret", "key id must be 1-64 letters, digits, '.', '_' or '-'",
                  "appears twice", "is neither hex nor base64", "bytes; at least", "are needed", "holds no key"].map { Array($0.utf8) }
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let secret = Array(trimmed(line[(colon + 1)...]))
            guard secret.count >= 12, !shown.contains(where: { contains($0, secret) }) else { continue }
            require(!contains(Array(error.detail.utf8), secret), "the error \(show(error.detail)) quotes a secret")
        }
    } catch {
        require(false, "an error that is not a KeyFileError: \(error)")
    }
    checkTokenFile(bytes)
    return 0
}

private func checkTokenFile(_ bytes: [UInt8]) {
    do {
        let tokens = try AccessTokens.parse(bytes, path: "/fuzz/tokens")
        var meaningful = 0
        PrivateFile.forEachLine(bytes) { _, _ in meaningful += 1 }
        require(tokens.hashes.count == meaningful, "\(tokens.hashes.count) hashes from \(show(bytes))")
        require(tokens.hashes.allSatisfy { $0.count == HMACSHA256.macLength }, "a hash of another length from \(show(bytes))")
        // The input's first line as a token: accepted exactly when its hash is listed.
        let token = String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self)
        let listed = tokens.hashes.contains(HMACSHA256.sha256([Array(token.utf8)]))
        require(tokens.accepts(token: token) == listed, "token \(show(token)) accepted: \(!listed)")
    } catch let error as KeyFileError {
        require(error.status == 500, "\(error)")
    } catch {
        require(false, "an error that is not a KeyFileError: \(error)")
    }
}

private func trimmed(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let space: Set<UInt8> = [0x20, 0x09, 0x0D]
    var text = text
    while let first = text.first, space.contains(first) { text.removeFirst() }
    while let last = text.last, space.contains(last) { text.removeLast() }
    return text
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    if needle.isEmpty { return true }
    for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
        return true
    }
    return false
}
