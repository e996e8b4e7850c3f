/// Settings that nginx passes to every program as `fastcgi_param`s.
package struct ServiceConfig: Sendable {
    /// `MOCKCLOUD_DATA`: the data directory.
    package let dataRoot: String
    /// `MOCKCLOUD_HMAC_KEYS` and `MOCKCLOUD_HMAC_REQUIRE`: signing of stored data.
    package let integrity: Integrity
    /// `MOCKCLOUD_TOKENS`: bearer tokens every request must carry; `nil` when off.
    package let access: AccessTokens?

    /// Reads the settings; a missing data directory or a bad key or token file
    /// is a 500 that names the problem, for every request, until it is fixed.
    package init(environment: CGIEnvironment) throws {
        dataRoot = try Self.dataRoot(environment)
        integrity = try Integrity(environment: environment)
        access = try AccessTokens.load(environment: environment)
    }

    /// Reads the settings and lets `request` through only with an accepted
    /// bearer token when tokens are on (401 without one, 403 with a wrong one).
    package init(authorizing request: CGIRequest) throws {
        try self.init(environment: request.environment)
        try access?.authorize(request)
    }

    /// `MOCKCLOUD_DATA` is required: a program that guessed would write the
    /// user's data where nobody looks for it.
    package static func dataRoot(_ environment: CGIEnvironment) throws -> String {
        guard let root = environment["MOCKCLOUD_DATA"], !root.isEmpty else {
            throw ServerError(
                message: "server misconfigured: MOCKCLOUD_DATA is not set",
                logDetail: "MOCKCLOUD_DATA is not set; add `fastcgi_param MOCKCLOUD_DATA /path/to/data;` to nginx")
        }
        return root
    }
}
