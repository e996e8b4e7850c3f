/// The query parameters each route takes (docs/API.md §2): any other, or
/// one given twice, is a 400 that names it and lists these. The server
/// checks every request against them; the client builds its queries from
/// the same names; `QueryParametersTests` holds docs/openapi.yaml to them.
package enum QueryParameters {
    /// Where a feed read starts: the anchor a previous page returned.
    package static let anchor = "anchor"
    /// A feed page's size (`WireLimits.feedPageSizes`).
    package static let limit = "limit"
    /// The device whose own writes a feed read leaves out.
    package static let excludeSource = "exclude-source"
    /// Seconds to hold a read until a change (`WireLimits.waitSeconds`).
    package static let wait = "wait"

    /// `GET` and `HEAD /inbox`: the change feed.
    package static let feed = [anchor, limit, excludeSource, wait]
    /// `GET` and `HEAD /user/settings`.
    package static let settings = [wait]
    /// Every other route and method.
    package static let none: [String] = []
}
