import MockCloudJSON
import MockCloudSystem

/// A settings file as read from disk: its bytes, tag and (when it parses) document.
package struct StoredSettings: Sendable {
    package let bytes: [UInt8]
    package let etag: String
    /// `nil` when the file is not JSON.
    package let document: JSONValue?

    init(bytes: [UInt8]) {
        self.bytes = bytes
        etag = EntityTag.of(bytes)
        // Files written by the Python service may hold NaN or Infinity.
        document = try? JSONParser.parse(bytes, maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true)
    }

    /// The stored `updatedAt` as an instant, with its text.
    var updatedAt: (text: String, instant: Timestamp.Micros)? {
        SettingsRoute.updatedAt(of: document)
    }
}
