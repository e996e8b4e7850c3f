#if canImport(CryptoKit)
import CryptoKit
#else
import COpenSSL
#endif
import MockCloudSystem

/// What the client trusts: the box's CA certificate, and nothing else (not
/// the system's CAs, never "insecure"). `mockcloud-admin tls show` prints
/// where the CA file is and its SHA-256.
public struct TrustAnchor: Sendable {
    /// The PEM file with the CA certificate.
    public let caFile: String
    /// The CA certificate, PEM, as read when this was made.
    public let pem: [UInt8]
    /// SHA-256 of the certificate's DER bytes, lowercase hex without colons
    /// (what `openssl x509 -fingerprint -sha256` prints, colons aside).
    public let sha256: String

    /// Reads the CA from `caFile`. With `expectedSHA256` (hex, colons and
    /// case ignored), the file's first certificate must have exactly that
    /// fingerprint: a CA file copied over an untrusted channel is checked
    /// against the fingerprint read off the box.
    public init(caFile: String, expectedSHA256: String? = nil) throws(ClientError) {
        let bytes: [UInt8]
        do {
            guard let read = try Sys.readFile(caFile) else { throw ClientError.local("no CA file \(caFile)") }
            bytes = read
        } catch let error as SystemError {
            throw .local("cannot read the CA file: \(error)")
        } catch {
            throw .local("no CA file \(caFile)")
        }
        guard let der = Self.firstCertificate(inPEM: bytes) else {
            throw .local("\(caFile) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        let digest = ASCII.hex(SHA256Digest.of(der))
        if let expected = expectedSHA256 {
            let wanted = String(expected.lowercased().filter { $0 != ":" })
            guard wanted == digest else {
                throw .untrusted("the CA in \(caFile) has SHA-256 \(digest), not the expected \(wanted)")
            }
        }
        self.caFile = caFile
        self.pem = bytes
        self.sha256 = digest
    }

    /// The DER bytes of the first `CERTIFICATE` block of a PEM file.
    static func firstCertificate(inPEM pem: [UInt8]) -> [UInt8]? {
        let begin = Array("-----BEGIN CERTIFICATE-----".utf8), end = Array("-----END CERTIFICATE-----".utf8)
        guard let start = pem.firstRange(of: begin)?.upperBound,
            let stop = pem[start...].firstRange(of: end)?.lowerBound
        else { return nil }
        let base64 = pem[start..<stop].filter { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        guard let der = ASCII.decodeBase64(Array(base64)), !der.isEmpty else { return nil }
        return der
    }
}

/// SHA-256: CryptoKit on Apple platforms, libcrypto's one-shot call elsewhere.
enum SHA256Digest {
    static func of(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(SHA256.hash(data: bytes))
        #else
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
        #endif
    }
}
