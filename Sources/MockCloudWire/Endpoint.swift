/// A path the service answers and the methods it serves there
/// (docs/API.md §2). The server's routes answer a 405 with `methods` in
/// `Allow`; nginx's method lines and its own 405's `Allow` are checked
/// against them (`EndpointTests`); the client builds its requests from them.
package enum Endpoint: Sendable, CaseIterable {
    /// `/user/settings`: the user's settings document (§3).
    case settings
    /// `/inbox`: the change feed, and a message posted under a new id (§4).
    case inbox
    /// `/inbox/<id>`: one message.
    case message
    /// `/inbox:bulk`: many inbox changes in one request (§8).
    case bulk

    /// The path; for `message`, the part before the id.
    package var path: String {
        switch self {
        case .settings: return "/user/settings"
        case .inbox: return "/inbox"
        case .message: return "/inbox/"
        case .bulk: return "/inbox:bulk"
        }
    }

    /// The methods served, in the order `Allow` lists them. Built when asked
    /// (a 405, a test): a request that is served never makes the array.
    package var methods: [HTTPMethod] {
        switch self {
        case .settings: return [.get, .head, .put, .patch, .delete]
        case .inbox: return [.get, .head, .post]
        case .message: return [.get, .head, .put, .delete]
        case .bulk: return [.post]
        }
    }

    /// `/inbox/<id>`.
    package static func message(_ id: MessageID) -> String { Endpoint.message.path + id.rawValue }
}
