/// A header name of the wire (docs/API.md §2), spelled once for the server
/// and the client. The CGI meta-variable a request's header arrives in on
/// the server (`X-User-Key` → `HTTP_X_USER_KEY`, RFC 3875 4.1.18) is the
/// HTTP layer's, derived from the name there (`HTTPHeader.variable`).
package struct HTTPHeader: Sendable, Equatable {
    /// As HTTP spells it, e.g. `X-User-Key`.
    package let name: String

    private init(_ name: String) {
        self.name = name
    }

    // Sent by clients, read by the server.
    package static let userKey = HTTPHeader("X-User-Key")
    package static let deviceID = HTTPHeader("X-Device-Id")
    package static let syncVersion = HTTPHeader("X-Sync-Version")
    package static let authorization = HTTPHeader("Authorization")
    package static let ifMatch = HTTPHeader("If-Match")
    package static let ifNoneMatch = HTTPHeader("If-None-Match")
    package static let contentEncoding = HTTPHeader("Content-Encoding")
    /// `fields` (`HeaderValue.mergeFields`): a settings PATCH merges per
    /// member, a GET answers the member times; in their answers, that they did.
    package static let merge = HTTPHeader("X-Merge")
    /// Every header above: the ones the server reads.
    package static let read = [userKey, deviceID, syncVersion, authorization, ifMatch, ifNoneMatch, contentEncoding, merge]

    // Written in answers, read by the client. (`Content-Type` is read from
    // its own meta-variable, `CONTENT_TYPE`.)
    package static let contentType = HTTPHeader("Content-Type")
    package static let contentLength = HTTPHeader("Content-Length")
    package static let etag = HTTPHeader("ETag")
    package static let location = HTTPHeader("Location")
    package static let allow = HTTPHeader("Allow")
    package static let wwwAuthenticate = HTTPHeader("WWW-Authenticate")
    package static let retryAfter = HTTPHeader("Retry-After")
    /// The members of a per-field patch whose stored value won (`MergeKept`).
    package static let mergeKept = HTTPHeader("X-Merge-Kept")
}

/// The header values that are words of the wire rather than data.
package enum HeaderValue {
    /// `Content-Type` of every JSON body, asked and answered.
    package static let json = "application/json"
    /// `Content-Type` of a settings `PATCH`: an RFC 7396 merge patch.
    package static let mergePatch = "application/merge-patch+json"
    /// `X-Merge`'s one value: a PATCH merges per member, a GET answers the
    /// member times (docs/API.md §3, "Per-field merge").
    package static let mergeFields = "fields"
    /// `If-None-Match` of a settings wait from a client that holds no
    /// document: the empty tag, which no document has. The box holds it
    /// until a document appears; a document's tag where nothing is stored
    /// answers 404 at once (docs/API.md §3).
    package static let noDocumentTag = "\"\""
}

extension Substring {
    /// A header value without the spaces, tabs, CRs and LFs around it, by
    /// bytes (a line's CR LF is one Character): the server's CGI values and
    /// the client's header lines alike.
    package func trimmingHeaderSpace() -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        let bytes = utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start = bytes.index(after: start) }
        while start < end, isSpace(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
