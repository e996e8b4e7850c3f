import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// A settings file as read from disk: its bytes, tag and (when it parses) document.
package struct StoredSettings: Sendable {
    package let bytes: [UInt8]
    package let etag: EntityTag
    /// `nil` when the file is not JSON.
    package let document: JSONValue?

    package init(bytes: [UInt8]) {
        // Files written by the Python service may hold NaN or Infinity.
        self.init(bytes: bytes, document: try? JSONParser.parse(
            bytes, maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true))
    }

    /// Bytes just printed from `document`: not parsed again.
    init(bytes: [UInt8], document: JSONValue?) {
        self.bytes = bytes
        etag = EntityTag(of: bytes)
        self.document = document
    }

    /// The stored `updatedAt` as an instant, with its text.
    package var updatedAt: (text: String, instant: Timestamp.Micros)? {
        Self.updatedAt(of: document)
    }

    /// A document's `updatedAt` when it is a string in an accepted form
    /// (basic or extended ISO 8601); any other value decides nothing.
    package static func updatedAt(of document: JSONValue?) -> (text: String, instant: Timestamp.Micros)? {
        guard let text = document?.objectValue?["updatedAt"]?.stringValue,
            let instant = Timestamp.parse(text)
        else { return nil }
        return (text, instant)
    }
}

/// What the settings store refuses; the HTTP layer words it and gives it a status.
package enum SettingsError: Error {
    case nothingStored
    /// The write's conditions failed; `current` is what is stored, if anything.
    case preconditionFailed(Preconditions.Failure, current: StoredSettings?)
    /// The incoming `updatedAt` is older than the stored one (last writer wins).
    case olderThanStored(incoming: String, stored: String, current: StoredSettings)
    /// The stored file is not JSON (edited or damaged by hand).
    case storedDocumentUnreadable(file: String)
    /// The stored file is JSON but not an object, so nothing can be merged into it.
    case storedDocumentNotAnObject(file: String)
    /// Python's indented layout of a deeply nested body can be many times its size.
    case storedFormTooLarge(size: Int, limit: Int)
    /// A per-field patch without `updatedAt`, the time of its edits.
    case editTimeMissing
    /// A per-field patch whose `updatedAt` is no time stamp (its JSON text).
    case editTimeUnreadable(String)
    /// The member times of a per-field write would pass their file's limit.
    case memberTimesTooLarge(size: Int, limit: Int)
}

/// Stored settings with the time of each top-level member (docs/API.md §3).
package struct TimedSettings: Sendable {
    package let stored: StoredSettings
    package let times: MemberTimes
    /// Why the member-times file was not used, for the server log; `nil`
    /// when it was, or when there is none (a plain write's document).
    package let problem: String?

    init(_ stored: StoredSettings, _ times: MemberTimes, problem: String? = nil) {
        self.stored = stored
        self.times = times
        self.problem = problem
    }
}

/// What a per-field merge stored and which members kept their stored value.
package struct FieldMerge: Sendable {
    /// The document now stored (the one that was, when nothing changed).
    package let stored: StoredSettings
    /// The patch's members whose stored value won, in the patch's order.
    package let kept: [String]
    /// What was wrong with the member-times file the merge read, for the
    /// server log; the merge then used whole-document times.
    package let problem: String?
}
