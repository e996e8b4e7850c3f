/// Settings that nginx passes to every program as `fastcgi_param`s.
package enum ServiceConfig {
    /// `MOCKCLOUD_DATA`: the data directory. Required: a program that guessed
    /// would write the user's data where nobody looks for it.
    package static func dataRoot(_ environment: [String: String]) throws -> String {
        guard let root = environment["MOCKCLOUD_DATA"], !root.isEmpty else {
            throw ServerError(
                message: "server misconfigured: MOCKCLOUD_DATA is not set",
                logDetail: "MOCKCLOUD_DATA is not set; add `fastcgi_param MOCKCLOUD_DATA /path/to/data;` to nginx")
        }
        return root
    }
}
