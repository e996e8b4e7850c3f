import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudTestSupport
import Testing

/// A request that names two users, two devices or two tokens could be read
/// one way by nginx and another by the program: identity headers count only
/// when sent once each. The programs decode no compression: a body sent with
/// a Content-Encoding is refused with a 415 that says so, not failed as
/// JSON that does not parse.
@Suite struct RequestHeaderCheckTests {
    static func respond(_ values: [String: String], repeated: Set<String> = []) throws -> (CGIResponse, Bool) {
        var env = ["REQUEST_METHOD": "PUT", "DOCUMENT_URI": "/x", "CONTENT_LENGTH": "2"]
        env.merge(values) { $1 }
        var called = false
        let (response, _) = try withStdin(Array("{}".utf8)) { fd in
            CGIProgram.respond(
                environment: Environment(env, repeated: repeated), bodyLimit: 10, stdin: fd, name: "unit-test"
            ) { _ in
                called = true
                return CGIResponse(status: 200, body: [])
            }
        }
        return (response, called)
    }

    @Test(arguments: [("HTTP_X_USER_KEY", "X-User-Key"), ("HTTP_X_DEVICE_ID", "X-Device-Id"), ("HTTP_AUTHORIZATION", "Authorization")])
    func anIdentityHeaderOnTwoLinesIs400AndTheHandlerNeverRuns(_ variable: String, _ name: String) throws {
        let (response, called) = try Self.respond([variable: "a"], repeated: [variable])
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "\#(name) sent more than once; send it once"}"#)
        #expect(!called)
    }

    @Test func twoLinesJoinedByAProxyAreRefusedToo() throws {
        let (response, called) = try Self.respond(["HTTP_AUTHORIZATION": "Bearer mct_a, Bearer mct_b"])
        #expect(response.text == #"{"error": "Authorization sent more than once; send it once"}"#)
        #expect(!called)
    }

    @Test(arguments: [("gzip", "gzip"), (" br ", "br"), ("deflate, gzip", "deflate, gzip")])
    func aBodyEncodingButIdentityIs415(_ encoding: String, _ shown: String) throws {
        let (response, called) = try Self.respond(["HTTP_CONTENT_ENCODING": encoding])
        #expect(response.status == 415)
        #expect(response.text == #"{"error": "Content-Encoding \#(shown) is not accepted; send the JSON uncompressed"}"#)
        #expect(!called)
    }

    @Test(arguments: ["", "identity", "Identity"])
    func identityOrNoEncodingGoesThrough(_ encoding: String) throws {
        let (response, called) = try Self.respond(["HTTP_CONTENT_ENCODING": encoding])
        #expect(response.status == 200)
        #expect(called)
    }
}
