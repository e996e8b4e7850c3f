import Foundation
import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

extension String {
    /// Puts the stored document's tag where a test table wrote `ETAG`.
    func replacingETAG(with etag: String) -> String {
        replacingOccurrences(of: "ETAG", with: etag)
    }
}

@Suite struct SettingsStoredSizeTests {
    @Test func aBodyWhoseIndentedFormWouldExceedTheStoredLimitIs413AndNothingIsWritten() throws {
        let data = try TemporaryDirectory()
        let route = SettingsRoute(dataRoot: data.path, clock: { 0 })
        // 60 levels of arrays around 80,000 zeros: about 160 KB sent, about 10 MB indented.
        let body = "{\"a\": " + String(repeating: "[", count: 60) + Array(repeating: "0", count: 80_000).joined(separator: ",")
            + String(repeating: "]", count: 60) + "}"
        #expect(body.utf8.count < SettingsRoute.bodyLimit)
        let response = answer {
            try route.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": "u1"], body: Array(body.utf8)))
        }
        #expect(response.status == 413)
        #expect(String(decoding: response.body, as: UTF8.self).contains("-byte limit; nest it less deeply"))
        #expect(data.entries("user_settings").isEmpty)
    }
}
