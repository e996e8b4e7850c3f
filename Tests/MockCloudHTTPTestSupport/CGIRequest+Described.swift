import MockCloudConfig
import MockCloudHTTP

extension CGIRequest {
    /// A request as a test describes it: the meta-variables nginx would set
    /// for this method, path, query, headers and body.
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
        self.init(environment: Environment(env), body: body)
    }
}
