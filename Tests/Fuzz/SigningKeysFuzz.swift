@testable import MockCloudCore

// The HMAC key file (`MOCKCLOUD_HMAC_KEYS`): `key-id:secret` lines, hex or
// base64 secrets of at least 32 bytes, comments and blank lines.
//
// Input: a key file's text. Oracles: a file that loads has unique, well-shaped
// ids and keys that verify their own MACs; an error never quotes a secret.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSigningKeys(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    do {
        let keys = try SigningKeys.parse(bytes, path: "/fuzz/keys")
        let ids = keys.keys.map(\.id)
        require(!ids.isEmpty, "no keys but no error")
        require(Set(ids).count == ids.count, "duplicate key ids \(ids)")
        for id in ids {
            require(Identifier.matches(id, maxLength: 64, extra: Array("._-".utf8)), "key id \(show(id))")
            require(keys.key(id: id) != nil, "key \(show(id)) cannot be found by id")
        }
        let mac = keys.current.hmac.authenticationCode(for: [bytes])
        require(mac.count == HMACSHA256.macLength, "MAC of \(mac.count) bytes")
        require(keys.current.hmac.isValid(mac: mac, for: [bytes]), "a key does not verify its own MAC")
    } catch let error as KeyFileError {
        let message = error.message
        let lines = bytes.split(separator: 0x0A)
        let idText = lines.compactMap { line in line.firstIndex(of: UInt8(ascii: ":")).map { Array(line[..<$0]) } }
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var secret = Array(line[(colon + 1)...])
            while let last = secret.last, last == 0x0D || last == 0x20 || last == 0x09 { secret.removeLast() }
            guard secret.count >= 12, !idText.contains(where: { contains($0, secret) }),
                !contains(Array("/fuzz/keys".utf8), secret)
            else { continue }
            require(!contains(Array(message.utf8), secret), "the error \(show(message)) quotes a secret")
        }
    } catch {
        require(false, "an error that is not a KeyFileError: \(error)")
    }
    return 0
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    if needle.isEmpty { return true }
    for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
        return true
    }
    return false
}
