/// A CGI response: `Status:` and headers, then the body, written in one `write(2)`.
package struct CGIResponse: Sendable, Equatable {
    package var status: Int
    /// Headers besides `Status`, `Content-Type` and `Content-Length`, in order.
    package var headers: [Header]
    /// JSON bytes; empty for 204 and 304.
    package var body: [UInt8]

    /// One response header.
    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String
        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    package init(status: Int, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON answer; the body is printed as the Python service prints it.
    package static func json(_ status: Int, _ value: JSONValue, headers: [Header] = []) -> CGIResponse {
        CGIResponse(status: status, headers: headers, body: JSONPrinter.compact(value))
    }

    /// `{"error": sentence, ...}` with the error's status and headers.
    package static func error(_ error: any HTTPResponseError) -> CGIResponse {
        var object = JSONObject()
        object["error"] = .string(error.message)
        for member in error.extraMembers { object[member.key] = member.value }
        return json(error.status, .object(object), headers: error.extraHeaders.map { Header($0.0, $0.1) })
    }

    /// The value of a header, for tests and tools.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The bytes a CGI program prints: headers, a blank line, the body.
    package var serialized: [UInt8] { serialized(includingBody: true) }

    /// The bytes a CGI program prints; without the body for HEAD.
    package func serialized(includingBody: Bool) -> [UInt8] {
        let hasBody = status != 204 && status != 304
        var out: [UInt8] = []
        out.reserveCapacity(256 + (hasBody && includingBody ? body.count : 0))
        func line(_ name: String, _ value: String) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "Status: ".utf8)
        ASCII.appendDecimal(status, to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: CGIResponse.reason(for: status).utf8)
        out.append(contentsOf: "\r\n".utf8)
        if hasBody { line("Content-Type", "application/json") }
        for header in headers { line(header.name, header.value) }
        if hasBody {
            out.append(contentsOf: "Content-Length: ".utf8)
            ASCII.appendDecimal(body.count, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        if hasBody && includingBody { out.append(contentsOf: body) }
        return out
    }

    /// The reason phrase of each status the programs send.
    package static func reason(for status: Int) -> String {
        switch status {
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
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 507: return "Insufficient Storage"
        default: return "Status \(status)"
        }
    }
}
