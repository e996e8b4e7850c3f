/// The request method. The server's routes switch over it exhaustively: a
/// method a route does not serve is a 405, never another method's handler.
package enum HTTPMethod: Sendable, Hashable, CustomStringConvertible {
    case get
    case head
    case post
    case put
    case patch
    case delete
    /// Any other method, as the client sent it (methods are case-sensitive).
    case other(String)

    package init(_ name: String) {
        switch name {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "PATCH": self = .patch
        case "DELETE": self = .delete
        default: self = .other(name)
        }
    }

    /// The method's name, e.g. `GET`.
    package var description: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .patch: return "PATCH"
        case .delete: return "DELETE"
        case .other(let name): return name
        }
    }
}
