/// The query parameters each route takes (docs/API.md §2): any other, or
/// one given twice, is a 400 that names it and lists these. The server
/// checks every request against them; the client builds its queries from
/// the same names; `QueryParametersTests` holds docs/openapi.yaml to them.
public enum QueryParameters {
    /// Where a feed read starts: the anchor a previous page returned.
    public static let anchor = "anchor"
    /// A feed page's size (`WireLimits.feedPageSizes`).
    public static let limit = "limit"
    /// The device whose own writes a feed read leaves out.
    public static let excludeSource = "exclude-source"
    /// Seconds to hold a read until a change (`WireLimits.waitSeconds`).
    public static let wait = "wait"

    /// `GET` and `HEAD /inbox`: the change feed.
    public static let feed = [anchor, limit, excludeSource, wait]
    /// `GET` and `HEAD /user/settings`.
    public static let settings = [wait]
    /// Every other route and method.
    public static let none: [String] = []
}
