import MockCloudStore

extension AccessTokens {
    /// Checks `Authorization: Bearer <token>`.
    package func authorize(_ request: CGIRequest) throws {
        guard let header = request.header("Authorization"), !header.isEmpty else { throw AccessError.missingToken }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw AccessError.missingToken }
        guard accepts(token: parts[1].trimmingSpaces()) else { throw AccessError.tokenNotAccepted }
    }
}
