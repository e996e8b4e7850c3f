/// An HTTP status code. The programs send only the codes named here; an
/// integer literal makes any other (tests compare with `404`).
package struct HTTPStatus: Sendable, Hashable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The three-digit code, e.g. 404.
    package let code: Int

    package init(_ code: Int) {
        self.code = code
    }

    package init(integerLiteral code: Int) {
        self.code = code
    }

    package static var ok: HTTPStatus { 200 }
    package static var created: HTTPStatus { 201 }
    package static var noContent: HTTPStatus { 204 }
    package static var notModified: HTTPStatus { 304 }
    package static var badRequest: HTTPStatus { 400 }
    package static var unauthorized: HTTPStatus { 401 }
    package static var forbidden: HTTPStatus { 403 }
    package static var notFound: HTTPStatus { 404 }
    package static var methodNotAllowed: HTTPStatus { 405 }
    package static var conflict: HTTPStatus { 409 }
    package static var gone: HTTPStatus { 410 }
    package static var preconditionFailed: HTTPStatus { 412 }
    package static var contentTooLarge: HTTPStatus { 413 }
    package static var unsupportedMediaType: HTTPStatus { 415 }
    package static var tooManyRequests: HTTPStatus { 429 }
    package static var internalServerError: HTTPStatus { 500 }
    package static var serviceUnavailable: HTTPStatus { 503 }
    package static var insufficientStorage: HTTPStatus { 507 }

    /// 204 and 304 carry no body (and no `Content-Type` or `Content-Length`).
    package var allowsBody: Bool { code != 204 && code != 304 }

    /// The reason phrase the `Status:` line carries (RFC 9110).
    package var reason: String {
        switch code {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 507: return "Insufficient Storage"
        default: return "Status \(code)"
        }
    }

    /// The code alone, e.g. `404`, as an `Int` prints.
    package var description: String { String(code) }
}
