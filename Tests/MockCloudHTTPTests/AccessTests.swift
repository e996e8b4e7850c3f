import Foundation
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// Optional bearer tokens: 401 without one, 403 with a wrong one, only
/// hashes on disk.
@Suite struct AccessTests {
    static func request(_ authorization: String?) -> CGIRequest {
        var headers = ["X-User-Key": "u1"]
        if let authorization { headers["Authorization"] = authorization }
        return CGIRequest(method: "GET", path: "/user/settings", headers: headers)
    }

    static let token = "mct_0123456789abcdef"
    static var tokens: AccessTokens {
        let hash = ASCII.hex(HMACSHA256.sha256([Array(token.utf8)]))
        return try! AccessTokens.parse(Array("# phone\nsha256:\(hash) phone\n".utf8), path: "t")
    }

    @Test(arguments: [nil, "", "Basic dTE6cA==", "Bearer", "Bearer "])
    func aRequestWithoutABearerTokenIs401WithAChallenge(authorization: String?) {
        #expect(throws: AccessError.missingToken) { try Self.tokens.authorize(Self.request(authorization)) }
        #expect(AccessError.missingToken.status == 401)
        #expect(AccessError.missingToken.extraHeaders.first?.0 == "WWW-Authenticate")
    }

    @Test(arguments: ["Bearer mct_0123456789abcdeF", "Bearer mct_0123456789abcde", "Bearer x", "Bearer \(token)x"])
    func aWrongTokenIs403(authorization: String) {
        #expect(throws: AccessError.tokenNotAccepted) { try Self.tokens.authorize(Self.request(authorization)) }
        #expect(AccessError.tokenNotAccepted.status == 403)
    }

    @Test(arguments: ["Bearer \(token)", "bearer \(token)", "Bearer  \(token) "])
    func theRightTokenPasses(authorization: String) throws {
        try Self.tokens.authorize(Self.request(authorization))
    }

    @Test func aMalformedTokenFileNamesItsLine() {
        #expect(throws: KeyFileError.malformed(
            path: "t", line: 2, reason: "expected sha256:<64 hex digits> [label] [keys=KEY,KEY...]", file: .tokens)) {
            try AccessTokens.parse(Array("\nsha256:abc\n".utf8), path: "t")
        }
    }

    @Test func theRouteIsClosedUntilTheTokenIsGiven() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path + "/tokens"
        let (token, line) = AccessTokens.newToken(label: "phone")
        #expect(token.hasPrefix("mct_") && token.count == 68)
        #expect(!line.contains(token))
        try writeKeys(file, line + "\n")
        let settings = ["MOCKCLOUD_DATA": dir.path, "MOCKCLOUD_TOKENS": file]
        let open = CGIRequest(method: "GET", path: "/user/settings", headers: ["X-User-Key": "u1"], environment: settings)
        #expect(throws: AccessError.missingToken) { try ServiceConfig(authorizing: open) }
        let authorized = CGIRequest(
            method: "GET", path: "/user/settings", headers: ["X-User-Key": "u1", "Authorization": "Bearer " + token],
            environment: settings)
        _ = try ServiceConfig(authorizing: authorized)
        chmod(file, 0o640)
        #expect(throws: KeyFileError.tooOpen(path: file, mode: 0o100640, file: .tokens)) { try ServiceConfig(authorizing: authorized) }
    }

    @Test func withoutMOCKCLOUD_TOKENSEveryRequestPassesAsInThePythonService() throws {
        let config = try ServiceConfig(authorizing: CGIRequest(environment: ["MOCKCLOUD_DATA": "/tmp"], body: []))
        #expect(config.access == nil)
    }
}
