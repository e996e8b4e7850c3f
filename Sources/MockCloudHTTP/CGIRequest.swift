import MockCloudJSON
import MockCloudStore

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
    package var environment: CGIEnvironment

    /// Builds a request from CGI meta-variables.
    package init(environment: CGIEnvironment, body: [UInt8]) {
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

    /// Builds a request the way a test or a tool would describe it.
    package init(
        method: String, path: String, query: String = "", headers: [String: String] = [:],
        contentType: String = "", body: [UInt8] = [], environment: [String: String] = [:]
    ) {
        var env = environment
        for (name, value) in headers { env[CGIRequest.metaVariable(forHeader: name)] = value }
        env["REQUEST_METHOD"] = method
        env["DOCUMENT_URI"] = path
        env["QUERY_STRING"] = query
        env["CONTENT_TYPE"] = contentType
        self.init(environment: CGIEnvironment(env), body: body)
    }

    /// The value of a request header, e.g. `header("If-Match")`.
    package func header(_ name: String) -> String? {
        environment[CGIRequest.metaVariable(forHeader: name)]
    }

    /// `X-User-Key` → `HTTP_X_USER_KEY`.
    static func metaVariable(forHeader name: String) -> String {
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
        guard let raw = header("X-User-Key"), !raw.isEmpty else { throw .missingUserKey }
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
            throw RequestError.invalidJSON(error)
        }
        guard let object = value.objectValue else { throw notAnObject }
        return object
    }

    /// The media type of `Content-Type` without parameters, lowercased.
    package var mediaType: String {
        let bare = contentType.prefix { $0 != ";" }
        return bare.trimmingSpaces().lowercased()
    }
}
