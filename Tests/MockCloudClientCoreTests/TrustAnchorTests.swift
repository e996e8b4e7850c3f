import MockCloudClient
import Testing

/// What the client trusts is exactly what the fingerprint covers: one
/// certificate, or nothing.
@Suite struct TrustAnchorTests {
    /// A certificate block around the bytes 00 01 02, whose SHA-256 is known.
    static let one = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n"
    static let sha = "ae4b3280e56e2faf83f414a6e3dabe9d5fbe18976544c05fed121accb85b53fc"
    static let other = "-----BEGIN CERTIFICATE-----\nAwQF\n-----END CERTIFICATE-----\n"

    @Test func oneCertificateIsTrustedAndItsFingerprintChecked() throws {
        let anchor = try TrustAnchor(pem: Array(("subject=CN = box\n" + Self.one).utf8), expectedSHA256: Self.sha.uppercased())
        #expect(anchor.sha256 == Self.sha && anchor.der == [0, 1, 2])
        #expect(anchor.pem == Array(Self.one.utf8))  // only the block reaches the transports
    }

    @Test func aWrongFingerprintIsUntrusted() {
        #expect(throws: ClientError.self) { try TrustAnchor(pem: Array(Self.other.utf8), expectedSHA256: Self.sha) }
    }

    @Test(arguments: [one + other, other + one, one + "-----BEGIN PRIVATE KEY-----\nAAEC\n-----END PRIVATE KEY-----\n",
                      one + "-----BEGIN CERTIFICATE-----\nAwQF\n"])
    func aFileWithAnythingBesideTheOneCertificateIsRefusedWithOrWithoutAPin(_ pem: String) {
        for pin in [Self.sha, nil] {
            #expect {
                try TrustAnchor(pem: Array(pem.utf8), from: "ca.crt", expectedSHA256: pin)
            } throws: { error in
                guard let error = error as? ClientError, error.code == .untrusted else { return false }
                let text = error.detail
                return text.hasPrefix("ca.crt holds 2 PEM blocks") && text.contains("exactly one")
            }
        }
    }

    @Test func noCertificateAtAllSaysSo() {
        #expect(throws: ClientError.local("ca.crt holds no PEM certificate (-----BEGIN CERTIFICATE-----)")) {
            try TrustAnchor(pem: Array("hello".utf8), from: "ca.crt")
        }
    }
}
