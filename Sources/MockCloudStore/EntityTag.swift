import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// The strong entity tag of stored bytes: `"<16 hex digits>"` (FNV-1a, 64
/// bits, over the exact bytes on disk, so it changes whenever the file does).
package struct EntityTag: Hashable, Sendable, CustomStringConvertible {
    /// The tag with its quotes, as `ETag` carries it.
    package let text: String

    package init(of bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        var tag: [UInt8] = []
        tag.reserveCapacity(18)
        tag.append(UInt8(ascii: "\""))
        ASCII.appendHex(hash, digits: 16, to: &tag)
        tag.append(UInt8(ascii: "\""))
        text = String(decoding: tag, as: UTF8.self)
    }

    /// A tag as a client sent it, quotes included (`"…"`).
    package init(quoted text: String) {
        self.text = text
    }

    package var description: String { text }
}

/// The tags an `If-Match` or `If-None-Match` names: any stored document
/// (`*`), or a list. A tag matches by its opaque value alone: this service
/// makes only strong tags, and the weak form `W/"x"` nginx sends for a
/// gzipped answer still names the bytes whose tag is `"x"`.
package enum TagCondition: Sendable, Equatable {
    case any
    case tags([EntityTag])

    /// True when `current` (nil: nothing stored) is named.
    package func names(_ current: EntityTag?) -> Bool {
        guard let current else { return false }
        switch self {
        case .any: return true
        case .tags(let tags): return tags.contains(current)
        }
    }

    /// True when a tag is named that a stored document may have had: the
    /// client holds a document. `*` and the empty tag
    /// (`HeaderValue.noDocumentTag`) say that it holds none.
    package var namesADocument: Bool {
        guard case .tags(let tags) = self else { return false }
        return tags.contains { $0.text != HeaderValue.noDocumentTag }
    }
}

/// The conditions a write is made on (RFC 7232's `If-Match` and
/// `If-None-Match`), checked against what is stored under the key's lock.
package struct Preconditions: Sendable, Equatable {
    package var ifMatch: TagCondition?
    package var ifNoneMatch: TagCondition?

    package init(ifMatch: TagCondition? = nil, ifNoneMatch: TagCondition? = nil) {
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
    }

    /// Why a write on these conditions may not go ahead.
    package enum Failure: Sendable, Equatable {
        /// `If-Match` names a tag, and nothing is stored.
        case nothingToMatch
        /// `If-Match` does not name the stored tag.
        case storedTagNotNamed
        /// `If-None-Match` names the stored tag (or `*`, and something is stored).
        case storedTagNamed
    }

    /// `nil` when a change may go ahead with `current` stored.
    package func failure(current: EntityTag?) -> Failure? {
        if let ifMatch, !ifMatch.names(current) { return current == nil ? .nothingToMatch : .storedTagNotNamed }
        if let ifNoneMatch, ifNoneMatch.names(current) { return .storedTagNamed }
        return nil
    }
}
