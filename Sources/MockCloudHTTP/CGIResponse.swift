import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// A CGI response: `Status:` and headers, then the body, written in one `write(2)`.
package struct CGIResponse: Sendable, Equatable {
    package var status: HTTPStatus
    /// Header names and values, alternating, in order. An array of strings,
    /// not of `Header`s: every process would build that array's generic type
    /// at run time (Benchmarks/README.md, "Where the time goes").
    private var fields: [String]
    /// JSON bytes; empty for 204 and 304.
    package var body: [UInt8]

    /// Headers besides `Status`, `Content-Type` and `Content-Length`, in order.
    package private(set) var headers: [Header] {
        get { stride(from: 0, to: fields.count, by: 2).map { Header(fields[$0], fields[$0 + 1]) } }
        set {
            fields = []
            for header in newValue { fields += [header.name, header.value] }
        }
    }

    /// One response header.
    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String
        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    package init(status: HTTPStatus, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        fields = []
        self.body = body
        self.headers = headers
    }

    /// A response with one header (an `ETag`, a `Location`).
    package init(status: HTTPStatus, header name: String, _ value: String, body: [UInt8] = []) {
        self.status = status
        fields = [name, value]
        self.body = body
    }

    /// A JSON answer; the body is printed as the Python service prints it.
    package static func json(_ status: HTTPStatus, _ value: JSONValue, headers: [Header] = []) -> CGIResponse {
        CGIResponse(status: status, headers: headers, body: JSONPrinter.compact(value))
    }

    /// A JSON answer with one header.
    package static func json(_ status: HTTPStatus, _ value: JSONValue, header name: String, _ headerValue: String) -> CGIResponse {
        CGIResponse(status: status, header: name, headerValue, body: JSONPrinter.compact(value))
    }

    /// `{"error": sentence, ...}` with the error's status and headers, and
    /// `"changed"` when `changed` is given (a write's 5xx).
    package static func error(_ error: any HTTPResponseError, changed: DataChange? = nil) -> CGIResponse {
        var object = JSONObject()
        object["error"] = .string(error.message)
        if let changed { object["changed"] = .string(changed.rawValue) }
        for member in error.extraMembers { object[member.key] = member.value }
        return json(error.status, .object(object), headers: error.extraHeaders.map { Header($0.0, $0.1) })
    }

    /// The value of a header, for tests and tools.
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return stride(from: 0, to: fields.count, by: 2).first { fields[$0].lowercased() == wanted }.map { fields[$0 + 1] }
    }

    /// The bytes a CGI program prints: headers, a blank line, the body.
    package var serialized: [UInt8] { serialized(includingBody: true) }

    /// The bytes a CGI program prints; without the body for HEAD.
    package func serialized(includingBody: Bool) -> [UInt8] {
        let hasBody = status.allowsBody
        var out: [UInt8] = []
        out.reserveCapacity(256 + (hasBody && includingBody ? body.count : 0))
        func line(_ name: String, _ value: String) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "Status: ".utf8)
        ASCII.appendDecimal(status.code, to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: status.reason.utf8)
        out.append(contentsOf: "\r\n".utf8)
        if hasBody { line(HTTPHeader.contentType.name, HeaderValue.json) }
        for i in stride(from: 0, to: fields.count, by: 2) { line(fields[i], fields[i + 1]) }
        if hasBody {
            out.append(contentsOf: HTTPHeader.contentLength.name.utf8)
            out.append(contentsOf: ": ".utf8)
            ASCII.appendDecimal(body.count, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        if hasBody && includingBody { out.append(contentsOf: body) }
        return out
    }
}
