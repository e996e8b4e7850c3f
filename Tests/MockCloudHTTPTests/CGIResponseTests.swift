import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// What a CGI program prints: `Status:`, headers, blank line, body.
@Suite struct CGIResponseTests {
    @Test func aJSONAnswerPrintsStatusTypeHeadersLengthThenBody() throws {
        let response = CGIResponse.json(200, try json(#"{"a":[1,"é"]}"#), headers: [.init("ETag", "\"0123456789abcdef\"")])
        #expect(response.wire
            == "Status: 200 OK\r\nContent-Type: application/json\r\nETag: \"0123456789abcdef\"\r\n"
            + "Content-Length: 20\r\n\r\n" + #"{"a": [1, "\u00e9"]}"#)
    }

    @Test func noContentHasNoBodyNoTypeAndNoLength() {
        #expect(CGIResponse(status: 204, body: Array("ignored".utf8)).wire == "Status: 204 No Content\r\n\r\n")
    }

    @Test func notModifiedCarriesOnlyItsHeaders() {
        let response = CGIResponse(status: 304, headers: [.init("ETag", "\"abc\"")])
        #expect(response.wire == "Status: 304 Not Modified\r\nETag: \"abc\"\r\n\r\n")
    }

    @Test func contentLengthCountsBytesNotCharacters() {
        let response = CGIResponse(status: 200, body: Array("é😀".utf8))
        #expect(response.wire.hasPrefix("Status: 200 OK\r\nContent-Type: application/json\r\nContent-Length: 6\r\n\r\n"))
    }

    @Test func anErrorPrintsItsSentenceAndExtraHeaders() {
        let error = RequestError.methodNotAllowed(method: .post, path: "/user/settings", allowed: [.get, .put])
        #expect(CGIResponse.error(error).wire
            == "Status: 405 Method Not Allowed\r\nContent-Type: application/json\r\nAllow: GET, PUT\r\n"
            + "Content-Length: 73\r\n\r\n"
            + #"{"error": "method POST not allowed on /user/settings; allowed: GET, PUT"}"#)
    }

    @Test func headersAreFoundWhateverTheirCase() {
        let response = CGIResponse(status: 200, headers: [.init("ETag", "\"x\""), .init("Allow", "GET")])
        #expect(response.header("etag") == "\"x\"")
        #expect(response.header("ALLOW") == "GET")
        #expect(response.header("Location") == nil)
    }

    @Test(arguments: [
        (200, "OK"), (201, "Created"), (204, "No Content"), (304, "Not Modified"), (400, "Bad Request"),
        (401, "Unauthorized"), (403, "Forbidden"), (404, "Not Found"), (405, "Method Not Allowed"),
        (409, "Conflict"), (410, "Gone"), (412, "Precondition Failed"), (413, "Content Too Large"),
        (415, "Unsupported Media Type"), (500, "Internal Server Error"), (503, "Service Unavailable"),
        (507, "Insufficient Storage"), (599, "Status 599"),
    ])
    func everyStatusHasItsReasonPhrase(_ status: Int, _ reason: String) {
        #expect(HTTPStatus(status).reason == reason)
        #expect(CGIResponse(status: HTTPStatus(status)).wire.hasPrefix("Status: \(status) \(reason)\r\n"))
    }

    @Test(arguments: [
        (RequestError.missingUserKey, 400, "X-User-Key header required"),
        (.invalidUserKey, 400, "invalid X-User-Key shape"),
        (.notFound, 404, "not found"),
        (.invalidContentLength("x1"), 400, #"invalid Content-Length "x1": expected a non-negative integer"#),
        (.bodyShorterThanContentLength(expected: 10, received: 3), 400,
            "request body ended after 3 of the 10 bytes its Content-Length announced"),
        (.bodyTooLarge(limit: 1_048_576), 413, "request body larger than this route's limit of 1048576 bytes"),
        (.invalidJSON(.invalid(offset: 0, reason: "unexpected character")), 400, "body is not valid JSON"),
        (.invalidJSON(.tooDeep(limit: 64)), 400, "JSON nested deeper than 64 levels"),
        (.notAnObject, 400, "body must be a JSON object"),
        (.unsupportedMediaType(expected: "application/merge-patch+json", received: ""), 415,
            "Content-Type must be application/merge-patch+json (got none)"),
        (.unsupportedMediaType(expected: "application/merge-patch+json", received: "text/plain"), 415,
            "Content-Type must be application/merge-patch+json (got text/plain)"),
    ])
    func everyRequestErrorHasItsStatusAndSentence(_ error: RequestError, _ status: Int, _ message: String) {
        #expect(error.status.code == status)
        #expect(error.message == message)
        #expect(error.extraHeaders.isEmpty)
        #expect(error.extraMembers.isEmpty)
        #expect(error.logDetail == nil)
    }

    @Test func aServerErrorDefaultsTo500() {
        let error = ServerError(message: "broken", logDetail: "detail")
        #expect(CGIResponse.error(error).status == 500)
        #expect(CGIResponse.error(error).text == #"{"error": "broken"}"#)
        #expect(error.logDetail == "detail")
    }
}
