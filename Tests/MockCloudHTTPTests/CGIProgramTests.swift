import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

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
            CGIProgram.respond(environment: Environment(env), bodyLimit: limit, stdin: fd, name: "unit-test") { request in
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
            var status: HTTPStatus { 503 }
            var message: String { "busy" }
            var extraMembers: [JSONMember] { [JSONMember("retry", .number("1"))] }
            var extraHeaders: [(String, String)] { [("Retry-After", "1")] }
        }
        let outcome = try Self.respond(contentLength: "", stdin: [], environment: ["REQUEST_METHOD": "GET"]) { _ in
            throw Busy()
        }
        #expect(outcome.response.wire
            == "Status: 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            + "Content-Length: 29\r\n\r\n" + #"{"error": "busy", "retry": 1}"#)
    }

    @Test func anUnexpectedErrorIsAGeneric500() throws {
        struct Surprise: Error {}
        let outcome = try Self.respond(contentLength: "", stdin: [], environment: ["REQUEST_METHOD": "GET"]) { _ in
            throw Surprise()
        }
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
        #expect(outcome.response.text == #"{"error": "server misconfigured; see the server log", "changed": "no"}"#)
        #expect(try ServiceConfig.dataRoot(["MOCKCLOUD_DATA": "/srv/data"]) == "/srv/data")
    }

    /// A write's 5xx says what became of the stored data; a read's does not.
    @Test(arguments: [
        ("PUT", StorageError.Phase.writing, #", "changed": "no"}"#),
        ("DELETE", .partlyCommitted, #", "changed": "maybe"}"#),
        ("POST", .syncingAfterCommit, #", "changed": "yes"}"#),
        ("PATCH", .reading, #", "changed": "no"}"#),
        ("GET", .reading, #"failed"}"#),
    ] as [(String, StorageError.Phase, String)])
    func aFailedWriteSaysWhetherTheDataChanged(_ method: String, _ phase: StorageError.Phase, _ ending: String) throws {
        let outcome = try Self.respond(contentLength: "", stdin: [], environment: ["REQUEST_METHOD": method]) { _ in
            throw StorageError(SystemError("fsync", path: "/d", errno: EIO), phase)
        }
        #expect(outcome.response.status == 500)
        #expect(outcome.response.text.hasSuffix(ending))
    }
}
