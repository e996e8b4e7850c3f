import MockCloudConfig
import MockCloudStore
import MockCloudWire

extension AccessTokens {
    /// Checks `Authorization: Bearer <token>`, and that a token limited to
    /// some user keys names one of them in `X-User-Key` (a request without
    /// a key goes on to the route's own 400).
    package func authorize(_ request: CGIRequest) throws {
        guard let header = request.header(HTTPHeader.authorization), !header.isEmpty else { throw AccessError.missingToken }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw AccessError.missingToken }
        guard let entry = entry(for: parts[1].trimmingHeaderSpace()) else { throw AccessError.tokenNotAccepted }
        // A malformed key is the route's 400, not a 403.
        if let keys = entry.keys, let key = request.header(HTTPHeader.userKey).flatMap(UserKey.init), !keys.contains(key) {
            throw AccessError.keyNotAllowed
        }
    }
}

extension ServiceConfig {
    /// Reads the settings and lets `request` through only with an accepted
    /// bearer token when tokens are on (401 without one, 403 with a wrong one).
    package init(authorizing request: CGIRequest) throws {
        try self.init(environment: request.environment)
        try access?.authorize(request)
    }
}
