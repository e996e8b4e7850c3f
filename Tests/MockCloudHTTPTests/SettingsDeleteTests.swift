import Foundation
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// DELETE: 204 once, then 404; conditions as for writes.
@Suite struct SettingsDeleteTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    @Test func deleteRemovesTheDocumentThenAnswers404() {
        server.send("PUT", #"{"a": 1}"#)
        #expect(server.send("DELETE").wire == "Status: 204 No Content\r\n\r\n")
        #expect(server.file == nil)
        #expect(server.data.entries("user_settings") == [])
        #expect(server.send("GET").text == SettingsServer.notFoundBody)
        let again = server.send("DELETE")
        #expect(again.status == 404)
        #expect(again.text == SettingsServer.notFoundBody)
    }

    @Test func deleteWhenNothingWasEverStoredIs404() {
        #expect(server.send("DELETE").text == SettingsServer.notFoundBody)
    }

    @Test func deleteWithAStaleIfMatchIs412AndKeepsTheDocument() throws {
        server.send("PUT", #"{"a": 1}"#)
        let before = try #require(server.fileBytes)
        let response = server.send("DELETE", headers: ["If-Match": "\"0000000000000000\""])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match does not match the stored settings' ETag", "#
            + #""current": {"a": 1, "serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag(of: before).text)])
        #expect(server.fileBytes == before)
    }

    @Test func deleteWithTheCurrentIfMatchRemoves() {
        server.send("PUT", #"{"a": 1}"#)
        #expect(server.send("DELETE", headers: ["If-Match": server.etag ?? ""]).status == 204)
        #expect(server.file == nil)
    }

    @Test func deleteWithIfMatchWhenNothingIsStoredIs412WithoutCurrent() {
        let response = server.send("DELETE", headers: ["If-Match": "*"])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match given but no settings are stored for this user"}"#)
        #expect(response.headers == [])
    }

    @Test func deleteWithIfNoneMatchStarWhenSomethingIsStoredIs412() {
        server.send("PUT", #"{"a": 1}"#)
        #expect(server.send("DELETE", headers: ["If-None-Match": "*"]).status == 412)
        #expect(server.file != nil)
    }
}
