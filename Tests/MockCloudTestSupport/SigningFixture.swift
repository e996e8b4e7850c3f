import Foundation
import Glibc
import MockCloudStore
import MockCloudWire

/// Keys, secrets and places the signing tests of every layer share.
package enum SigningFixture {
    /// The UTF-8 bytes of `text`.
    package static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A 32-byte secret in hex and in base64.
    package static let hexSecret = String(repeating: "ab", count: 32)
    package static let base64Secret = Data(repeating: 0x5a, count: 32).base64EncodedString()

    /// Signing with the keys of a key file's text.
    package static func integrity(_ lines: String, require: Bool = false) throws -> Integrity {
        Integrity(keys: try SigningKeys.parse(bytes(lines), path: "k"), requireSigned: require)
    }

    /// User u1's settings.
    package static let place = DocumentPlace(store: .userSettings, key: UserKey("u1")!)
}

/// Writes a key (or token) file with mode 0600.
package func writeKeys(_ path: String, _ text: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o600)
}
