/// Where a stored document belongs. The MAC covers this with the bytes, so a
/// file copied to another key, another id or another route fails like an edit.
package struct DocumentPlace: Sendable, Equatable {
    /// `user_settings` or `inbox`.
    package let route: String
    package let key: UserKey
    /// The message id; empty for settings.
    package let id: String

    package init(route: String, key: UserKey, id: String = "") {
        self.route = route
        self.key = key
        self.id = id
    }
}

/// A stored document that must not be served.
package struct IntegrityError: HTTPResponseError, Equatable {
    /// The file, for the server log.
    package let file: String
    /// Why, for the server log.
    package let reason: String

    package init(file: String, reason: String) {
        self.file = file
        self.reason = reason
    }

    package var status: Int { 500 }
    package var message: String { "stored data failed its integrity check" }
    package var logDetail: String? { "integrity check failed for \(file): \(reason)" }
}

/// HMAC-SHA256 signing of stored documents (CONTRACT section 6): off unless
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

    /// Reads `MOCKCLOUD_HMAC_KEYS` and `MOCKCLOUD_HMAC_REQUIRE`.
    package init(environment: CGIEnvironment) throws {
        let require = environment["MOCKCLOUD_HMAC_REQUIRE"] == "1"
        guard let path = environment["MOCKCLOUD_HMAC_KEYS"], !path.isEmpty else {
            if require {
                throw ServerError(
                    message: "server misconfigured: MOCKCLOUD_HMAC_REQUIRE=1 needs MOCKCLOUD_HMAC_KEYS",
                    logDetail: "MOCKCLOUD_HMAC_REQUIRE=1 is set but MOCKCLOUD_HMAC_KEYS is not")
            }
            self = .off
            return
        }
        self.init(keys: try SigningKeys.load(path: path), requireSigned: require)
    }

    static let header = Array("mockcloud-hmac-sha256 1".utf8)

    /// The MAC's message: the header, the route, the user key, the id and
    /// the bytes, separated by NUL bytes.
    private func feed(_ stream: inout SHA256Stream, _ bytes: [UInt8], _ place: DocumentPlace) {
        withUnsafeBytes(of: UInt8(0)) { separator in
            stream.update(Self.header)
            stream.update(separator)
            stream.update(place.route)
            stream.update(separator)
            stream.update(place.key.rawValue)
            stream.update(separator)
            stream.update(place.id)
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
