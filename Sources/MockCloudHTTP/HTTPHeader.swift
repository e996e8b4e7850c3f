/// A header name the service reads or writes, spelled once, with the CGI
/// meta-variable a request's header arrives in (`X-User-Key` →
/// `HTTP_X_USER_KEY`, RFC 3875 4.1.18): written out, not derived per
/// request, since deriving it costs every request a string each time.
package struct HTTPHeader: Sendable, Equatable {
    /// As HTTP spells it, e.g. `X-User-Key`.
    package let name: String
    /// The meta-variable, e.g. `HTTP_X_USER_KEY`.
    package let variable: String

    private init(_ name: String, _ variable: String = "") {
        self.name = name
        self.variable = variable
    }

    // Read from requests.
    package static let userKey = HTTPHeader("X-User-Key", "HTTP_X_USER_KEY")
    package static let deviceID = HTTPHeader("X-Device-Id", "HTTP_X_DEVICE_ID")
    package static let syncVersion = HTTPHeader("X-Sync-Version", "HTTP_X_SYNC_VERSION")
    package static let authorization = HTTPHeader("Authorization", "HTTP_AUTHORIZATION")
    package static let ifMatch = HTTPHeader("If-Match", "HTTP_IF_MATCH")
    package static let ifNoneMatch = HTTPHeader("If-None-Match", "HTTP_IF_NONE_MATCH")
    package static let contentEncoding = HTTPHeader("Content-Encoding", "HTTP_CONTENT_ENCODING")
    /// `fields`: a settings PATCH merges per member, a GET answers the member
    /// times; in their answers, that they did.
    package static let merge = HTTPHeader("X-Merge", "HTTP_X_MERGE")
    /// Every header above, for the test that checks their meta-variables.
    package static let read = [userKey, deviceID, syncVersion, authorization, ifMatch, ifNoneMatch, contentEncoding, merge]

    // Written in answers.
    package static let contentType = HTTPHeader("Content-Type")
    package static let contentLength = HTTPHeader("Content-Length")
    package static let etag = HTTPHeader("ETag")
    package static let location = HTTPHeader("Location")
    package static let allow = HTTPHeader("Allow")
    package static let wwwAuthenticate = HTTPHeader("WWW-Authenticate")
    package static let retryAfter = HTTPHeader("Retry-After")
    /// The members of a per-field patch whose stored value won.
    package static let mergeKept = HTTPHeader("X-Merge-Kept")
}
