import MockCloudCore
import Testing

/// RFC 3875 meta-variables become a request; header names map to `HTTP_*`.
@Suite struct CGIRequestTests {
    @Test func metaVariablesBecomeTheRequest() {
        let request = CGIRequest(
            environment: [
                "REQUEST_METHOD": "PATCH", "DOCUMENT_URI": "/user/settings", "REQUEST_URI": "/ignored?x=1",
                "QUERY_STRING": "a=1&b=%20", "CONTENT_TYPE": "application/merge-patch+json",
                "HTTP_X_USER_KEY": "u1", "HTTP_IF_NONE_MATCH": "\"abc\"", "MOCKCLOUD_DATA": "/data",
                "HTTP_X_V2_ID": "7", "HTTP_X_\u{FC}BER": "u",
            ],
            body: Array("{}".utf8))
        #expect(request.method == "PATCH")
        #expect(request.path == "/user/settings")
        #expect(request.query == "a=1&b=%20")
        #expect(request.contentType == "application/merge-patch+json")
        #expect(request.body == Array("{}".utf8))
        #expect(request.header("X-User-Key") == "u1")
        #expect(request.header("if-none-match") == "\"abc\"")
        #expect(request.header("If-Match") == nil)
        // Digits stay; only ASCII letters are upper-cased, other bytes pass as they are.
        #expect(request.header("x-v2-id") == "7")
        #expect(request.header("x-\u{FC}ber") == "u")
        #expect(request.environment["MOCKCLOUD_DATA"] == "/data")
    }

    @Test func absentMetaVariablesHaveDefaults() {
        let request = CGIRequest(environment: [:], body: [])
        #expect(request.method == "GET")
        #expect(request.path == "")
        #expect(request.query == "")
        #expect(request.contentType == "")
    }

    @Test(arguments: [
        (["DOCUMENT_URI": "/user/settings", "REQUEST_URI": "/other"], "/user/settings"),
        (["DOCUMENT_URI": "", "REQUEST_URI": "/user/settings?x=1&y=2"], "/user/settings"),
        (["REQUEST_URI": "/user/settings"], "/user/settings"),
        (["SCRIPT_NAME": "/user", "PATH_INFO": "/settings"], "/user/settings"),
        (["SCRIPT_NAME": "/user/settings"], "/user/settings"),
    ])
    func thePathComesFromDocumentURIThenRequestURIThenScriptNameAndPathInfo(
        _ environment: [String: String], _ path: String
    ) {
        #expect(CGIRequest(environment: CGIEnvironment(environment), body: []).path == path)
    }

    @Test func theTestInitialiserSetsMetaVariablesAsTheServerWould() {
        let request = CGIRequest(
            method: "PUT", path: "/user/settings", query: "q=1", headers: ["X-User-Key": "u1", "If-Match": "*"],
            contentType: "application/json", body: [0x7B, 0x7D])
        #expect(request.environment["REQUEST_METHOD"] == "PUT")
        #expect(request.environment["DOCUMENT_URI"] == "/user/settings")
        #expect(request.environment["QUERY_STRING"] == "q=1")
        #expect(request.environment["CONTENT_TYPE"] == "application/json")
        #expect(request.environment["HTTP_X_USER_KEY"] == "u1")
        #expect(request.environment["HTTP_IF_MATCH"] == "*")
        #expect(request.body == [0x7B, 0x7D])
    }

    @Test func aValidUserKeyIsReturned() throws {
        let request = CGIRequest(method: "GET", path: "/", headers: ["X-User-Key": "Ab_9-"])
        #expect(try request.userKey().rawValue == "Ab_9-")
    }

    @Test(arguments: [nil, ""] as [String?])
    func anAbsentOrEmptyUserKeyIsMissing(_ key: String?) {
        let request = CGIRequest(method: "GET", path: "/", headers: key.map { ["X-User-Key": $0] } ?? [:])
        #expect(throws: RequestError.missingUserKey) { try request.userKey() }
    }

    @Test(arguments: ["../etc", " ", "a b", "é", String(repeating: "k", count: 129)])
    func aUserKeyOfAnotherShapeIsInvalid(_ key: String) {
        let request = CGIRequest(method: "GET", path: "/", headers: ["X-User-Key": key])
        #expect(throws: RequestError.invalidUserKey) { try request.userKey() }
    }

    @Test(arguments: [
        ("application/merge-patch+json", "application/merge-patch+json"),
        ("application/merge-patch+json; charset=utf-8", "application/merge-patch+json"),
        ("  Application/Merge-Patch+JSON\t;charset=UTF-8", "application/merge-patch+json"),
        ("application/json", "application/json"),
        ("", ""),
    ])
    func theMediaTypeIsTheContentTypeWithoutParametersLowercased(_ contentType: String, _ mediaType: String) {
        #expect(CGIRequest(method: "PATCH", path: "/", contentType: contentType).mediaType == mediaType)
    }
}

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
        let error = RequestError.methodNotAllowed(method: "POST", path: "/user/settings", allowed: ["GET", "PUT"])
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
        #expect(CGIResponse.reason(for: status) == reason)
        #expect(CGIResponse(status: status).wire.hasPrefix("Status: \(status) \(reason)\r\n"))
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
        #expect(error.status == status)
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

/// `CGIProgram.respond`: the body is read exactly as announced, refused
/// bodies are still drained, and every failure becomes a JSON answer.
@Suite struct CGIProgramTests {
    /// A handler that echoes the body it got, so tests see exactly what was read.
    static func echo(_ request: CGIRequest) -> CGIResponse {
        CGIResponse(status: 200, body: request.body)
    }

    static func respond(
        contentLength: String?, stdin: [UInt8], limit: Int = 10, environment: [String: String] = [:],
        handler: (CGIRequest) throws -> CGIResponse = echo
    ) throws -> (response: CGIResponse, unread: [UInt8], handlerCalled: Bool) {
        var env = ["REQUEST_METHOD": "PUT", "DOCUMENT_URI": "/x"].merging(environment) { $1 }
        env["CONTENT_LENGTH"] = contentLength
        var called = false
        let (response, unread) = try withStdin(stdin) { fd in
            CGIProgram.respond(environment: CGIEnvironment(env), bodyLimit: limit, stdin: fd, name: "unit-test") { request in
                called = true
                return try handler(request)
            }
        }
        return (response, unread, called)
    }

    @Test(arguments: [nil, ""] as [String?])
    func anAbsentOrEmptyContentLengthMeansNoBodyAndStdinIsNotRead(_ length: String?) throws {
        let outcome = try Self.respond(contentLength: length, stdin: Array("junk".utf8))
        #expect(outcome.response == CGIResponse(status: 200, body: []))
        #expect(outcome.unread == Array("junk".utf8))
    }

    @Test func contentLengthZeroIsAnEmptyBody() throws {
        let outcome = try Self.respond(contentLength: "0", stdin: [])
        #expect(outcome.response == CGIResponse(status: 200, body: []))
    }

    @Test func exactlyContentLengthBytesAreRead() throws {
        let outcome = try Self.respond(contentLength: "5", stdin: Array("hello, more".utf8))
        #expect(outcome.response.text == "hello")
        #expect(outcome.unread == Array(", more".utf8))
    }

    @Test func aBodyOfExactlyTheLimitIsAccepted() throws {
        let outcome = try Self.respond(contentLength: "10", stdin: Array("0123456789".utf8), limit: 10)
        #expect(outcome.response.text == "0123456789")
    }

    @Test(arguments: [
        ("abc", #"\"abc\""#), ("-1", #"\"-1\""#), ("+5", #"\"+5\""#), (" 5", #"\" 5\""#), ("5 ", #"\"5 \""#),
        ("0x10", #"\"0x10\""#), ("1e3", #"\"1e3\""#), ("5.0", #"\"5.0\""#), ("\u{665}", #"\"\u0665\""#),
    ])
    func aContentLengthThatIsNotADecimalNumberIs400(_ length: String, _ quotedInJSON: String) throws {
        let outcome = try Self.respond(contentLength: length, stdin: Array("hello".utf8))
        #expect(!outcome.handlerCalled)
        #expect(outcome.response.status == 400)
        #expect(outcome.response.text
            == #"{"error": "invalid Content-Length \#(quotedInJSON): expected a non-negative integer"}"#)
    }

    @Test func aBodyOverTheLimitIs413AndIsDrainedFirst() throws {
        let outcome = try Self.respond(contentLength: "11", stdin: Array("0123456789A".utf8), limit: 10)
        #expect(!outcome.handlerCalled)
        #expect(outcome.response.wire
            == "Status: 413 Content Too Large\r\nContent-Type: application/json\r\nContent-Length: 68\r\n\r\n"
            + #"{"error": "request body larger than this route's limit of 10 bytes"}"#)
        #expect(outcome.unread == [])
    }

    @Test func aBodyMuchLargerThanThePipeIsDrainedBefore413() throws {
        let body = [UInt8](repeating: 0x61, count: 3 << 20)
        let outcome = try Self.respond(contentLength: String(body.count), stdin: body, limit: 1 << 20)
        #expect(outcome.response.status == 413)
        #expect(outcome.response.text == #"{"error": "request body larger than this route's limit of 1048576 bytes"}"#)
        #expect(outcome.unread.count == 0)
    }

    @Test func aTooLargeContentLengthWhoseBodyEndsEarlyStill413sWithoutWaiting() throws {
        let outcome = try Self.respond(contentLength: "5000000", stdin: Array("short".utf8), limit: 10)
        #expect(outcome.response.status == 413)
        #expect(outcome.unread == [])
    }

    @Test func aBodyShorterThanItsContentLengthIs400() throws {
        let outcome = try Self.respond(contentLength: "10", stdin: Array("abc".utf8))
        #expect(!outcome.handlerCalled)
        #expect(outcome.response.wire
            == "Status: 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 84\r\n\r\n"
            + #"{"error": "request body ended after 3 of the 10 bytes its Content-Length announced"}"#)
    }

    @Test func theBodyIsReadEvenWhenTheHandlerRefusesTheRequest() throws {
        let outcome = try Self.respond(contentLength: "4", stdin: Array("body".utf8)) { _ in
            throw RequestError.invalidUserKey
        }
        #expect(outcome.unread == [])
        #expect(outcome.response == CGIResponse(status: 400, body: Array(#"{"error": "invalid X-User-Key shape"}"#.utf8)))
    }

    @Test func anHTTPErrorFromTheHandlerKeepsItsStatusHeadersAndMembers() throws {
        struct Busy: HTTPResponseError {
            var status: Int { 503 }
            var message: String { "busy" }
            var extraMembers: [JSONMember] { [JSONMember("retry", .number("1"))] }
            var extraHeaders: [(String, String)] { [("Retry-After", "1")] }
        }
        let outcome = try Self.respond(contentLength: "", stdin: []) { _ in throw Busy() }
        #expect(outcome.response.wire
            == "Status: 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            + "Content-Length: 29\r\n\r\n" + #"{"error": "busy", "retry": 1}"#)
    }

    @Test func anUnexpectedErrorIsAGeneric500() throws {
        struct Surprise: Error {}
        let outcome = try Self.respond(contentLength: "", stdin: []) { _ in throw Surprise() }
        #expect(outcome.response == CGIResponse(
            status: 500, body: Array(#"{"error": "internal error; see the server log"}"#.utf8)))
    }

    @Test func aMissingDataDirectoryIsAClear500() throws {
        #expect(throws: (any Error).self) { try ServiceConfig.dataRoot([:]) }
        #expect(throws: (any Error).self) { try ServiceConfig.dataRoot(["MOCKCLOUD_DATA": ""]) }
        let outcome = try Self.respond(contentLength: "", stdin: [], environment: ["MOCKCLOUD_DATA": ""]) { request in
            try SettingsRoute(config: ServiceConfig(environment: request.environment)).respond(to: request)
        }
        #expect(outcome.response.status == 500)
        #expect(outcome.response.text == #"{"error": "server misconfigured: MOCKCLOUD_DATA is not set"}"#)
        #expect(try ServiceConfig.dataRoot(["MOCKCLOUD_DATA": "/srv/data"]) == "/srv/data")
    }
}

/// The settings route behind `respond`, as `main.swift` wires it: the 1 MiB
/// limit itself is accepted, one byte more is 413.
@Suite struct SettingsBodyLimitTests {
    let data: TemporaryDirectory

    init() throws { data = try TemporaryDirectory() }

    func put(_ body: [UInt8]) throws -> (response: CGIResponse, unread: [UInt8]) {
        let environment: CGIEnvironment = [
            "REQUEST_METHOD": "PUT", "DOCUMENT_URI": "/user/settings", "CONTENT_LENGTH": String(body.count),
            "HTTP_X_USER_KEY": "u1", "MOCKCLOUD_DATA": data.path,
        ]
        let (response, unread) = try withStdin(body) { fd in
            CGIProgram.respond(environment: environment, bodyLimit: SettingsRoute.bodyLimit, stdin: fd, name: "t") {
                try SettingsRoute(dataRoot: ServiceConfig.dataRoot($0.environment), clock: { 0 }).respond(to: $0)
            }
        }
        return (response, unread)
    }

    /// `{"pad": "aaa…"}` of exactly `size` bytes.
    static func document(ofSize size: Int) -> [UInt8] {
        Array(#"{"pad": ""#.utf8) + [UInt8](repeating: 0x61, count: size - 11) + Array(#""}"#.utf8)
    }

    @Test func aSettingsBodyOfExactly1MiBIsStored() throws {
        let body = Self.document(ofSize: SettingsRoute.bodyLimit)
        #expect(body.count == 1_048_576)
        let (response, unread) = try put(body)
        #expect(response.status == 200)
        #expect(unread == [])
        #expect(data.text(of: "user_settings/u1.json")?.hasSuffix("\n  \"serverReceivedAt\": \"19700101T000000.000000Z\"\n}") == true)
    }

    @Test func aSettingsBodyOneByteOver1MiBIs413AndNothingIsStored() throws {
        let (response, unread) = try put(Self.document(ofSize: SettingsRoute.bodyLimit + 1))
        #expect(response.status == 413)
        #expect(response.text == #"{"error": "request body larger than this route's limit of 1048576 bytes"}"#)
        #expect(unread == [])
        #expect(data.entries() == [])
    }
}

/// `application/x-www-form-urlencoded` queries, as the feed reads them.
@Suite struct QueryStringTests {
    @Test func partsNamesAndValuesAreDecoded() throws {
        let query = try #require(QueryString("&anchor=0.0.0&&limit=10&exclude-source=a+b%2Bc%26d&flag&=v&limit=99&"))
        #expect(query.names == ["anchor", "limit", "exclude-source", "flag", "", "limit"])
        #expect(query.values == ["0.0.0", "10", "a b+c&d", "", "v", "99"])
        #expect(query["limit"] == "10")  // the first value given wins
        #expect(query["flag"] == "")
        #expect(query["missing"] == nil)
        #expect(try #require(QueryString("")).names.isEmpty)
    }

    @Test(arguments: ["a=%FF", "a=%4", "a=%zz", "%=1", "a=%C3"])
    func malformedEscapesAndInvalidUTF8AreRefused(query: String) {
        #expect(QueryString(query) == nil)
    }
}

/// The index-range line and field walkers the key, token and sidecar parsers share.
@Suite struct ByteLinesTests {
    private func lines(_ text: String) -> [(Int, String)] {
        let bytes = Array(text.utf8)
        var lines = ByteLines(bytes)
        var out: [(Int, String)] = []
        while let line = lines.next() { out.append((lines.number, String(decoding: bytes[line], as: UTF8.self))) }
        return out
    }

    @Test func linesAreNumberedAndAFinalNewlineEndsTheLastOne() {
        #expect(lines("").isEmpty)
        #expect(lines("\n").map(\.1) == [""])
        #expect(lines("a\n\nb").map(\.0) == [1, 2, 3])
        #expect(lines("a\n\nb").map(\.1) == ["a", "", "b"])
        #expect(lines("a\nb\n").map(\.1) == ["a", "b"])
        let bytes = Array("\n\nx\n".utf8)
        var nonEmpty = ByteLines(bytes)
        #expect(nonEmpty.nextNonEmpty() == 2..<3)
        #expect(nonEmpty.number == 3)
        #expect(nonEmpty.nextNonEmpty() == nil)
    }

    @Test func fieldsSkipRepeatedAndOuterSeparators() {
        let bytes = Array("  a  bc d ".utf8)
        var fields = ByteFields(bytes, 0..<bytes.count, separator: 0x20)
        var out: [String] = []
        while let field = fields.next() { out.append(String(decoding: bytes[field], as: UTF8.self)) }
        #expect(out == ["a", "bc", "d"])
        var none = ByteFields(bytes, 0..<2, separator: 0x20)
        #expect(none.next() == nil)
        var part = ByteFields(bytes, 5..<7, separator: 0x20)
        #expect(part.next() == 5..<7)
    }
}
