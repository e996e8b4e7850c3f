import MockCloudJSON
import MockCloudWire

/// What is wrong with the request itself, whatever the route.
package enum RequestError: HTTPResponseError, Equatable {
    case missingUserKey
    case invalidUserKey
    case notFound
    case methodNotAllowed(method: HTTPMethod, path: String, allowed: [HTTPMethod])
    case invalidContentLength(String)
    case bodyShorterThanContentLength(expected: Int, received: Int)
    case bodyTooLarge(limit: Int)
    case invalidJSON(JSONError)
    case notAnObject
    /// A PATCH body that is valid JSON but not an object.
    case mergePatchNotObject
    case unsupportedMediaType(expected: String, received: String)
    /// A header that says who is asking (`X-User-Key`, `X-Device-Id`,
    /// `Authorization`) came on more than one line, or joined by a proxy.
    case repeatedHeader(String)
    /// A `Content-Encoding` other than `identity` on the request.
    case unsupportedContentEncoding(String)
    /// A query string that is not form-encoded (a bad escape, not UTF-8).
    case malformedQuery
    /// A query parameter the route does not take: its name, the request
    /// (`GET /inbox`) and the names the route takes.
    case unknownQueryParameter(String, request: String, takes: [String])
    /// A query parameter given more than once.
    case repeatedQueryParameter(String, request: String, takes: [String])
    /// A `wait` that is not a whole number of seconds in `WireLimits.waitSeconds`.
    case invalidWait(String)
    /// An `X-Merge` value other than `fields`.
    case unknownMerge(String)
    /// `X-Merge` on a method it does not apply to (PUT, DELETE).
    case mergeNotForMethod(HTTPMethod)

    package var status: HTTPStatus {
        switch self {
        case .missingUserKey, .invalidUserKey, .invalidContentLength, .bodyShorterThanContentLength,
            .invalidJSON, .notAnObject, .mergePatchNotObject, .repeatedHeader, .malformedQuery,
            .unknownQueryParameter, .repeatedQueryParameter, .invalidWait, .unknownMerge, .mergeNotForMethod:
            return .badRequest
        case .notFound: return .notFound
        case .methodNotAllowed: return .methodNotAllowed
        case .bodyTooLarge: return .contentTooLarge
        case .unsupportedMediaType, .unsupportedContentEncoding: return .unsupportedMediaType
        }
    }

    package var message: String {
        switch self {
        case .missingUserKey: return "X-User-Key header required"
        case .invalidUserKey: return "invalid X-User-Key shape"
        case .notFound: return "not found"
        case .methodNotAllowed(let method, let path, let allowed):
            return "method \(method) not allowed on \(path); allowed: \(Self.list(allowed))"
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
        case .mergePatchNotObject: return "merge patch must be a JSON object"
        case .unsupportedMediaType(let expected, let received):
            let got = received.isEmpty ? "none" : received
            return "Content-Type must be \(expected) (got \(got))"
        case .repeatedHeader(let name): return "\(name) sent more than once; send it once"
        case .unsupportedContentEncoding(let encoding):
            return "Content-Encoding \(encoding) is not accepted; send the JSON uncompressed"
        case .malformedQuery: return "malformed query string"
        case .unknownQueryParameter(let name, let request, let takes):
            return "unknown query parameter \(String(reflecting: name)); \(Self.takes(request, takes))"
        case .repeatedQueryParameter(let name, let request, let takes):
            return "query parameter \(String(reflecting: name)) given more than once; \(Self.takes(request, takes)), each once"
        case .invalidWait(let text):
            return "invalid wait \(String(reflecting: text)): must be a whole number of seconds from "
                + "\(WireLimits.waitSeconds.lowerBound) to \(WireLimits.waitSeconds.upperBound)"
        case .unknownMerge(let value):
            return "X-Merge \(String(reflecting: value)) is not known: send X-Merge: fields to merge or read per member, or no X-Merge"
        case .mergeNotForMethod(let method):
            return "X-Merge applies to GET, HEAD and PATCH, not \(method): a \(method) changes the whole document"
        }
    }

    package var extraHeaders: [(String, String)] {
        if case .methodNotAllowed(_, _, let allowed) = self { return [(HTTPHeader.allow.name, Self.list(allowed))] }
        return []
    }

    /// `GET /inbox takes anchor, limit, exclude-source, wait`.
    private static func takes(_ request: String, _ names: [String]) -> String {
        names.isEmpty ? "\(request) takes no query parameters" : "\(request) takes " + names.joined(separator: ", ")
    }

    /// `GET, HEAD, PUT`: the methods as `Allow` lists them.
    private static func list(_ methods: [HTTPMethod]) -> String {
        methods.map(\.description).joined(separator: ", ")
    }
}
