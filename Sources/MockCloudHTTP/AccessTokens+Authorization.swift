import MockCloudStore

extension AccessTokens {
    /// Checks `Authorization: Bearer <token>`, and that a token limited to
    /// some user keys names one of them in `X-User-Key` (a request without
    /// a key goes on to the route's own 400).
    package func authorize(_ request: CGIRequest) throws {
        guard let header = request.header("Authorization"), !header.isEmpty else { throw AccessError.missingToken }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw AccessError.missingToken }
        guard let entry = entry(for: parts[1].trimmingSpaces()) else { throw AccessError.tokenNotAccepted }
        if let keys = entry.keys, let key = request.header("X-User-Key"), !key.isEmpty, !keys.contains(key) {
            throw AccessError.keyNotAllowed
        }
    }
}
