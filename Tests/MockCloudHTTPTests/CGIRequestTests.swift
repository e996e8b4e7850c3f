import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
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
        #expect(request.method.description == "PATCH")
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
        #expect(request.method.description == "GET")
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
        #expect(CGIRequest(environment: Environment(environment), body: []).path == path)
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

/// The meta-variables the headers the service reads arrive in (the HTTP
/// layer's, written out for speed): each is its name's RFC 3875 variable.
@Suite struct HTTPHeaderTests {
    @Test(arguments: HTTPHeader.read)
    func eachReadHeadersVariableIsItsRFC3875Name(_ header: HTTPHeader) {
        #expect(header.variable == CGIRequest.metaVariable(forHeader: header.name))
    }

    @Test func theDerivationIsRFC3875s() {
        #expect(CGIRequest.metaVariable(forHeader: "X-User-Key") == "HTTP_X_USER_KEY")
        #expect(CGIRequest.metaVariable(forHeader: "if-none-match") == "HTTP_IF_NONE_MATCH")
        #expect(HTTPHeader.etag.variable == "HTTP_ETAG")
    }

    @Test func aReadHeaderIsFoundUnderItsVariable() {
        let request = CGIRequest(environment: ["HTTP_X_DEVICE_ID": "phone-1", "HTTP_IF_NONE_MATCH": "*"], body: [])
        #expect(request.header(HTTPHeader.deviceID) == "phone-1")
        #expect(request.header(HTTPHeader.ifNoneMatch) == "*")
        #expect(request.header(HTTPHeader.userKey) == nil)
    }
}
