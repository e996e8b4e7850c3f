import MockCloudJSON

/// What the client trusts: the box's CA certificate, and nothing else (not
/// the system's CAs, never "insecure"). `mockcloud-admin tls show` prints
/// where the CA file is and its SHA-256.
///
/// A CA file holds exactly one certificate, the box's: a file with more
/// (say the box's CA with another appended) is refused, never partly
/// trusted, so a fingerprint check covers everything the transports trust.
public struct TrustAnchor: Sendable {
    /// Where the certificate came from (a path, or what the app said).
    public let caFile: String
    /// The one certificate, PEM (its `BEGIN`/`END` block alone): what the
    /// transports are given.
    public let pem: [UInt8]
    /// The certificate, DER.
    public let der: [UInt8]
    /// SHA-256 of the certificate's DER bytes, lowercase hex without colons
    /// (what `openssl x509 -fingerprint -sha256` prints, colons aside).
    public let sha256: String

    /// Reads the CA from `caFile`. With `expectedSHA256` (hex, colons and
    /// case ignored), the certificate must have exactly that fingerprint: a
    /// CA file copied over an untrusted channel is checked against the
    /// fingerprint read off the box.
    public init(caFile: String, expectedSHA256: String? = nil) throws {
        guard let bytes = try Platform.read(caFile) else { throw ClientError.local("no CA file \(caFile)") }
        try self.init(pem: bytes, from: caFile, expectedSHA256: expectedSHA256)
    }

    /// The CA from PEM bytes the app carries (a resource in its bundle, say);
    /// `source` names them in errors.
    public init(pem bytes: [UInt8], from source: String = "the CA", expectedSHA256: String? = nil) throws {
        let blocks = Self.pemBlocks(bytes)
        guard !blocks.isEmpty else {
            throw ClientError.local("\(source) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard blocks.count == 1, blocks[0].label == "CERTIFICATE" else {
            let labels = blocks.map(\.label).joined(separator: ", ")
            throw ClientError.untrusted("\(source) holds \(blocks.count) PEM blocks (\(labels)); a CA file must hold exactly one"
                + " certificate, the box's CA (mockcloud-admin tls show writes it): remove the others")
        }
        guard let der = ASCII.decodeBase64(blocks[0].base64), !der.isEmpty else {
            throw ClientError.local("\(source): its certificate is not valid base64")
        }
        let digest = ASCII.hex(Platform.sha256(der))
        if let expected = expectedSHA256 {
            let wanted = String(expected.lowercased().filter { $0 != ":" && $0 != " " })
            guard wanted == digest else {
                throw ClientError.untrusted("the CA in \(source) has SHA-256 \(digest), not the expected \(wanted)")
            }
        }
        caFile = source
        pem = Array(blocks[0].text)
        self.der = der
        sha256 = digest
    }

    /// The `-----BEGIN X-----` … `-----END X-----` blocks of a PEM file: their
    /// label, their whole text and their base64 (line breaks dropped). A
    /// `BEGIN` without its `END` counts as a block of label "unterminated".
    static func pemBlocks(_ pem: [UInt8]) -> [(label: String, text: ArraySlice<UInt8>, base64: [UInt8])] {
        let begin = Array("-----BEGIN ".utf8), end = Array("-----END ".utf8), dashes = Array("-----".utf8)
        var blocks: [(label: String, text: ArraySlice<UInt8>, base64: [UInt8])] = []
        var rest = pem[...]
        while let open = rest.firstRange(of: begin) {
            guard let labelEnd = rest[open.upperBound...].firstRange(of: dashes),
                let close = rest[labelEnd.upperBound...].firstRange(of: end),
                let closeEnd = rest[close.upperBound...].firstRange(of: dashes)
            else {
                blocks.append(("unterminated", rest[open.lowerBound...], []))
                break
            }
            let label = String(decoding: rest[open.upperBound..<labelEnd.lowerBound], as: UTF8.self)
            let base64 = rest[labelEnd.upperBound..<close.lowerBound].filter {
                $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: " ")
            }
            var text = Array(rest[open.lowerBound..<closeEnd.upperBound])
            text.append(UInt8(ascii: "\n"))
            blocks.append((label, text[...], Array(base64)))
            rest = rest[closeEnd.upperBound...]
        }
        return blocks
    }
}
