import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudWire

extension HTTPHeader {
    /// The CGI meta-variable this header arrives in: how CGI renames a
    /// header is this layer's, not the wire's (`metaVariable(forHeader:)`).
    /// The headers the service reads have theirs written out here, since
    /// deriving one per lookup cost every request 9k to 13k instructions
    /// (a new string each time; Tests/budget/instructions.sh);
    /// `HTTPHeaderTests` derives each and checks it against these.
    package var variable: String {
        switch self {
        case .userKey: return "HTTP_X_USER_KEY"
        case .deviceID: return "HTTP_X_DEVICE_ID"
        case .authorization: return "HTTP_AUTHORIZATION"
        case .contentEncoding: return "HTTP_CONTENT_ENCODING"
        case .ifNoneMatch: return "HTTP_IF_NONE_MATCH"
        case .ifMatch: return "HTTP_IF_MATCH"
        case .merge: return "HTTP_X_MERGE"
        case .syncVersion: return "HTTP_X_SYNC_VERSION"
        default: return CGIRequest.metaVariable(forHeader: name)
        }
    }
}

/// An HTTP request as CGI (RFC 3875) hands it over: meta-variables plus the body.
package struct CGIRequest: Sendable {
    /// `REQUEST_METHOD`, e.g. `PUT`.
    package var method: HTTPMethod
    /// The normalised, percent-decoded path (`DOCUMENT_URI`), without the query.
    package var path: String
    /// `QUERY_STRING`, still percent-encoded.
    package var query: String
    /// `CONTENT_TYPE`; empty when the client sent none.
    package var contentType: String
    /// The whole body, exactly `CONTENT_LENGTH` bytes.
    package var body: [UInt8]
    /// Every meta-variable, e.g. `HTTP_X_USER_KEY`, `MOCKCLOUD_DATA`.
    package var environment: Environment

    /// Builds a request from CGI meta-variables.
    package init(environment: Environment, body: [UInt8]) {
        self.environment = environment
        self.body = body
        method = HTTPMethod(environment["REQUEST_METHOD"] ?? "GET")
        contentType = environment["CONTENT_TYPE"] ?? ""
        query = environment["QUERY_STRING"] ?? ""
        if let documentURI = environment["DOCUMENT_URI"], !documentURI.isEmpty {
            path = documentURI
        } else if let requestURI = environment["REQUEST_URI"], !requestURI.isEmpty {
            path = String(requestURI.prefix { $0 != "?" })
        } else {
            path = (environment["SCRIPT_NAME"] ?? "") + (environment["PATH_INFO"] ?? "")
        }
    }

    /// `REMOTE_ADDR`: the client's address as nginx names it (on a LAN box
    /// without a proxy, the device's); `nil` when not given.
    package var remoteAddress: String? { environment["REMOTE_ADDR"] }

    /// The value of one of the headers the service reads.
    package func header(_ header: HTTPHeader) -> String? {
        environment[header.variable]
    }

    /// `X-User-Key` → `HTTP_X_USER_KEY` (RFC 3875 4.1.18): `HTTP_`, then
    /// the name in upper case with `-` as `_`. Written into one string of
    /// the right size, with no intermediate ones.
    package static func metaVariable(forHeader name: String) -> String {
        let prefix = "HTTP_"
        return String(unsafeUninitializedCapacity: prefix.utf8.count + name.utf8.count) { out in
            var count = 0
            for byte in prefix.utf8 {
                out[count] = byte
                count += 1
            }
            for byte in name.utf8 {
                switch byte {
                case UInt8(ascii: "-"): out[count] = UInt8(ascii: "_")
                case UInt8(ascii: "a")...UInt8(ascii: "z"): out[count] = byte - 0x20
                default: out[count] = byte
                }
                count += 1
            }
            return count
        }
    }

    /// The `X-User-Key`, checked against the allow-list before it touches any path.
    package func userKey() throws(RequestError) -> UserKey {
        guard let raw = header(HTTPHeader.userKey), !raw.isEmpty else { throw .missingUserKey }
        guard let key = UserKey(raw) else { throw .invalidUserKey }
        return key
    }

    /// The body as a JSON object: invalid JSON is a 400 `invalidJSON`; valid
    /// JSON that is not an object throws `notAnObject`.
    package func jsonObjectBody(or notAnObject: any Error) throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw RequestError.invalidJSON(JSONError(error))
        }
        guard let object = value.objectValue else { throw notAnObject }
        return object
    }

    /// The conditions of a write: `If-Match` and `If-None-Match`.
    package var preconditions: Preconditions {
        Preconditions(ifMatch: tagCondition(HTTPHeader.ifMatch), ifNoneMatch: tagCondition(HTTPHeader.ifNoneMatch))
    }

    /// The tags an `If-Match` / `If-None-Match` header names; `nil` when it
    /// is absent. `W/` is dropped (the store compares opaque values), and a
    /// member that is not a quoted tag is kept as a bare opaque value, so
    /// that an unquoted tag still compares.
    package func tagCondition(_ name: HTTPHeader) -> TagCondition? {
        guard let header = header(name) else { return nil }
        var tags: [EntityTag] = []
        for part in header.split(separator: ",") {
            var item = Substring(part.trimmingHeaderSpace())
            if item == "*" { return .any }
            if item.hasPrefix("W/") { item = item.dropFirst(2) }
            if item.count >= 2, item.first == "\"", item.last == "\"" {
                tags.append(EntityTag(quoted: String(item)))
            } else if !item.isEmpty {
                tags.append(EntityTag(quoted: "\"" + item + "\""))
            }
        }
        return .tags(tags)
    }

    /// The media type of `Content-Type` without parameters, lowercased.
    package var mediaType: String {
        let bare = contentType.prefix { $0 != ";" }
        return bare.trimmingHeaderSpace().lowercased()
    }
}
