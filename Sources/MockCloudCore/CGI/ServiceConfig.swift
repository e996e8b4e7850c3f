/// Settings that nginx passes to every program as `fastcgi_param`s.
package struct ServiceConfig: Sendable {
    /// `MOCKCLOUD_DATA`: the data directory.
    package let dataRoot: String
    /// `MOCKCLOUD_HMAC_KEYS` and `MOCKCLOUD_HMAC_REQUIRE`: signing of stored data.
    package let integrity: Integrity

    /// Reads the settings; a missing data directory or a bad key file is a
    /// 500 that names the problem, for every request, until it is fixed.
    package init(environment: CGIEnvironment) throws {
        dataRoot = try Self.dataRoot(environment)
        integrity = try Integrity(environment: environment)
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
