import MockCloudJSON
import MockCloudSystem

/// HMAC-SHA256 signing of stored documents (docs/API.md §6): off unless
/// `MOCKCLOUD_HMAC_KEYS` names a key file. A document's MACs live in a sidecar
/// `<file>.mac`:
///
///     mockcloud-hmac-sha256 1
///     <key-id> <64 hex digits>
///
/// Any line that verifies makes the document valid, so that a write can first
/// publish a sidecar valid for both the old and the new bytes, then rename the
/// document, then drop the old MAC: a crash anywhere leaves a valid pair.
package struct Integrity: Sendable {
    /// `nil` when signing is off.
    package let keys: SigningKeys?
    /// `MOCKCLOUD_HMAC_REQUIRE=1`: unsigned (legacy) documents are refused.
    package let requireSigned: Bool

    /// Signing off: documents are neither signed nor checked.
    package static let off = Integrity(keys: nil, requireSigned: false)

    package init(keys: SigningKeys?, requireSigned: Bool) {
        self.keys = keys
        self.requireSigned = requireSigned
    }

    static let header = Array("mockcloud-hmac-sha256 1".utf8)

    /// The MAC's message: the header, the store's name (with what the file holds,
    /// when it is not the document), the user key, the id and the bytes,
    /// separated by NUL bytes.
    private func feed(_ stream: inout SHA256Stream, _ bytes: [UInt8], _ place: DocumentPlace) {
        withUnsafeBytes(of: UInt8(0)) { separator in
            stream.update(Self.header)
            stream.update(separator)
            stream.update(place.domain)
            stream.update(separator)
            stream.update(place.key.rawValue)
            stream.update(separator)
            // Settings have no id: an empty field.
            if let id = place.id { stream.update(id.rawValue) }
            stream.update(separator)
            stream.update(bytes)
        }
    }

    /// The sidecar for `bytes` signed with the current key, plus a line for
    /// each of `alsoValid` (the bytes a crash may leave in place instead).
    package func sidecar(for bytes: [UInt8], at place: DocumentPlace, alsoValid: [[UInt8]] = []) -> [UInt8]? {
        guard let key = keys?.current else { return nil }
        var text = Self.header + [0x0A]
        for document in [bytes] + alsoValid {
            let mac = key.hmac.authenticationCode { feed(&$0, document, place) }
            text += Array("\(key.id) \(ASCII.hex(mac))\n".utf8)
        }
        return text
    }

    /// What a document and its sidecar (if any) are worth.
    package enum Verdict: Equatable {
        case signed(keyID: String)
        case unsigned
        case invalid(reason: String)
    }

    /// Checks `bytes` against the sidecar's MACs.
    package func verdict(for bytes: [UInt8], sidecar: [UInt8]?, at place: DocumentPlace) -> Verdict {
        guard let keys else { return .unsigned }
        guard let sidecar else { return .unsigned }
        // Blank lines are skipped; the first line is the header, each other
        // one `<key-id> <64 hex digits>`, fields separated by spaces.
        var lines = ByteLines(sidecar)
        guard let first = lines.nextNonEmpty(), sidecar[first].elementsEqual(Self.header) else {
            return .invalid(reason: "sidecar is not a mockcloud MAC file")
        }
        var unknown: [String] = []
        var macLines = 0
        while let line = lines.nextNonEmpty() {
            macLines += 1
            var fields = ByteFields(sidecar, line, separator: 0x20)
            guard let idField = fields.next(), let macField = fields.next(), fields.next() == nil,
                let mac = ASCII.decodeHex(sidecar[macField])
            else {
                return .invalid(reason: "sidecar line is malformed")
            }
            let id = String(decoding: sidecar[idField], as: UTF8.self)
            guard let key = keys.key(id: id) else {
                unknown.append(id)
                continue
            }
            if key.hmac.isValid(mac: mac, { feed(&$0, bytes, place) }) { return .signed(keyID: id) }
        }
        if !unknown.isEmpty, unknown.count == macLines {
            return .invalid(reason: "signed with key \(unknown.joined(separator: ", ")), which the key file no longer holds")
        }
        return .invalid(reason: "MAC does not match the content and place of the file")
    }
}
