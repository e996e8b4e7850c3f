import MockCloudConfig
import MockCloudHTTP

/// The CGI meta-variables nginx's snippet sets for a request: the Swift
/// tests' one builder (the in-process route tests through `CGIRequest`, the
/// process tests through `ProgramRunner`). `headers` are HTTP names;
/// `Content-Type` becomes `CONTENT_TYPE`, any other `X-Name` `HTTP_X_NAME`.
/// `CONTENT_LENGTH` is the body's length, empty without a body (as nginx
/// sends it for a GET), unless `contentLength` says otherwise; the client
/// is at `REMOTE_ADDR` 127.0.0.1 unless `extra` says otherwise.
package func cgiVariables(
    method: String, path: String, query: String = "", headers: [String: String] = [:], body: [UInt8]? = nil,
    contentLength: String? = nil, extra: [String: String] = [:]
) -> [String: String] {
    var variables = [
        "REQUEST_METHOD": method, "DOCUMENT_URI": path, "QUERY_STRING": query, "CONTENT_TYPE": "",
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
    ]
    variables["CONTENT_LENGTH"] = contentLength ?? body.map { String($0.count) } ?? ""
    for (name, value) in headers {
        if name.lowercased() == "content-type" {
            variables["CONTENT_TYPE"] = value
        } else {
            variables[CGIRequest.metaVariable(forHeader: name)] = value
        }
    }
    variables.merge(extra) { $1 }
    return variables
}

extension CGIRequest {
    /// A request as a test describes it (`cgiVariables`), with its body.
    package init(
        method: String, path: String, query: String = "", headers: [String: String] = [:],
        contentType: String = "", body: [UInt8] = [], environment: [String: String] = [:]
    ) {
        var described = headers
        if !contentType.isEmpty { described["Content-Type"] = contentType }
        let variables = cgiVariables(method: method, path: path, query: query, headers: described, extra: environment)
        self.init(environment: Environment(variables), body: body)
    }

    /// The value of any request header, by its HTTP name (`header("If-Match")`).
    package func header(_ name: String) -> String? {
        environment[CGIRequest.metaVariable(forHeader: name)]
    }
}
