/// An error that knows its HTTP answer; the CGI edge alone turns it into
/// `Status:` + `{"error": message, ...extraMembers}`.
package protocol HTTPResponseError: Error {
    /// The status code, e.g. 409.
    var status: Int { get }
    /// The sentence for the `error` field: what went wrong and what to do.
    var message: String { get }
    /// Fields beside `error`, e.g. `current` on a 409.
    var extraMembers: [JSONMember] { get }
    /// Headers beside `Content-Type`, e.g. `Allow` on a 405.
    var extraHeaders: [(String, String)] { get }
    /// A line for stderr (nginx's error log), when the operator should know.
    var logDetail: String? { get }
}

extension HTTPResponseError {
    package var extraMembers: [JSONMember] { [] }
    package var extraHeaders: [(String, String)] { [] }
    package var logDetail: String? { nil }
}

/// What is wrong with the request itself, whatever the route.
package enum RequestError: HTTPResponseError, Equatable {
    case missingUserKey
    case invalidUserKey
    case notFound
    case methodNotAllowed(method: String, path: String, allowed: [String])
    case invalidContentLength(String)
    case bodyShorterThanContentLength(expected: Int, received: Int)
    case bodyTooLarge(limit: Int)
    case invalidJSON(JSONError)
    case notAnObject
    case unsupportedMediaType(expected: String, received: String)

    package var status: Int {
        switch self {
        case .missingUserKey, .invalidUserKey, .invalidContentLength, .bodyShorterThanContentLength,
            .invalidJSON, .notAnObject:
            return 400
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .bodyTooLarge: return 413
        case .unsupportedMediaType: return 415
        }
    }

    package var message: String {
        switch self {
        case .missingUserKey: return "X-User-Key header required"
        case .invalidUserKey: return "invalid X-User-Key shape"
        case .notFound: return "not found"
        case .methodNotAllowed(let method, let path, let allowed):
            return "method \(method) not allowed on \(path); allowed: \(allowed.joined(separator: ", "))"
        case .invalidContentLength(let value):
            return "invalid Content-Length \(String(reflecting: value)): expected a non-negative integer"
        case .bodyShorterThanContentLength(let expected, let received):
            return "request body ended after \(received) of the \(expected) bytes its Content-Length announced"
        case .bodyTooLarge(let limit):
            return "request body larger than this route's limit of \(limit) bytes"
        case .invalidJSON(.tooDeep(let limit)):
            return "JSON nested deeper than \(limit) levels"
        case .invalidJSON: return "body is not valid JSON"
        case .notAnObject: return "body must be a JSON object"
        case .unsupportedMediaType(let expected, let received):
            let got = received.isEmpty ? "none" : received
            return "Content-Type must be \(expected) (got \(got))"
        }
    }

    package var extraHeaders: [(String, String)] {
        if case .methodNotAllowed(_, _, let allowed) = self { return [("Allow", allowed.joined(separator: ", "))] }
        return []
    }
}

/// A server-side fault: misconfiguration or an unexpected failure. The
/// client gets the sentence; stderr gets the detail.
package struct ServerError: HTTPResponseError {
    package let status: Int
    package let message: String
    package let logDetail: String?

    package init(status: Int = 500, message: String, logDetail: String? = nil) {
        self.status = status
        self.message = message
        self.logDetail = logDetail
    }
}
