import Foundation
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// GET and HEAD: 404 until something is stored, then the document with its tag.
@Suite struct SettingsGetTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    static let pythonFile = #"""
        {
          "updatedAt": "20260518T044304.095000Z",
          "name": "caf\u00e9",
          "serverReceivedAt": "20250101T000000.000000Z"
        }
        """#

    @Test func getWhenNothingIsStoredIs404() {
        #expect(server.send("GET").wire
            == "Status: 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 45\r\n\r\n"
            + SettingsServer.notFoundBody)
    }

    @Test func getServesAPythonWrittenFileWithTheTagOfItsBytes() throws {
        try server.storeByHand(Self.pythonFile)
        let response = server.send("GET")
        #expect(response.status == 200)
        #expect(response.text
            == #"{"updatedAt": "20260518T044304.095000Z", "name": "caf\u00e9", "serverReceivedAt": "20250101T000000.000000Z"}"#)
        #expect(response.headers == [.init("ETag", EntityTag(of: Array(Self.pythonFile.utf8)).text)])
    }

    @Test func getAfterPutReturnsWhatPutReturnedWithTheSameTag() {
        let put = server.send("PUT", #"{"a": 1}"#)
        let get = server.send("GET")
        #expect(get == put)
        #expect(get.header("ETag") == server.etag)
    }

    @Test func theTagChangesWhenTheDocumentChanges() throws {
        let first = try #require(server.send("PUT", #"{"a": 1}"#).header("ETag"))
        let second = try #require(server.send("PUT", #"{"a": 2}"#).header("ETag"))
        #expect(first != second)
        #expect(server.send("GET").header("ETag") == second)
    }

    @Test func aMatchingIfNoneMatchIs304WithTheTagAndNoBody() throws {
        try server.storeByHand(Self.pythonFile)
        let etag = try #require(server.etag)
        #expect(server.send("GET", headers: ["If-None-Match": etag]).wire
            == "Status: 304 Not Modified\r\nETag: \(etag)\r\n\r\n")
    }

    /// `ETAG` stands for the stored document's tag.
    @Test(arguments: [
        ("ETAG", 304), ("\"0000000000000000\", ETAG", 304), ("\"0000000000000000\",ETAG", 304),
        ("ETAG , \"1111111111111111\"", 304), ("W/ETAG", 304), ("*", 304), ("\"0000000000000000\"", 200),
        ("\"0000000000000000\", \"1111111111111111\"", 200), ("W/\"0000000000000000\"", 200),
    ])
    func ifNoneMatchListsAreSearchedForTheCurrentTag(_ header: String, _ status: Int) throws {
        try server.storeByHand(Self.pythonFile)
        let etag = try #require(server.etag)
        let response = server.send("GET", headers: ["If-None-Match": header.replacingETAG(with: etag)])
        #expect(response.status.code == status)
        #expect(response.header("ETag") == etag)
        #expect(response.body.isEmpty == (status == 304))
    }

    @Test func ifNoneMatchWhenNothingIsStoredIsStill404() {
        #expect(server.send("GET", headers: ["If-None-Match": "*"]).text == SettingsServer.notFoundBody)
    }

    @Test func headAnswersWithTheHeadersOfGet() throws {
        try server.storeByHand(Self.pythonFile)
        let get = server.send("GET")
        let head = server.send("HEAD")
        #expect(head.status == 200)
        #expect(head.headers == get.headers)
        #expect(head.wire.hasPrefix("Status: 200 OK\r\nContent-Type: application/json\r\nETag: \(server.etag ?? "")\r\n"
            + "Content-Length: \(get.body.count)\r\n\r\n"))
    }

    @Test func headWhenNothingIsStoredIs404AndAMatchingTagIs304() throws {
        #expect(server.send("HEAD").status == 404)
        try server.storeByHand(Self.pythonFile)
        let etag = try #require(server.etag)
        #expect(server.send("HEAD", headers: ["If-None-Match": etag]) == CGIResponse(status: 304, headers: [.init("ETag", etag)]))
    }

    @Test func aStoredFileThatIsNotJSONIs500OnGet() throws {
        try server.storeByHand("{\"half\": ")
        let response = server.send("GET")
        #expect(response.status == 500)
        #expect(response.text == #"{"error": "the stored settings for this user are not valid JSON"}"#)
        #expect(server.file == "{\"half\": ")
    }

    @Test func aPutOverwritesAStoredFileThatIsNotJSON() throws {
        try server.storeByHand("garbage")
        let response = server.send("PUT", #"{"updatedAt": "2000-01-01T00:00:00Z"}"#)
        #expect(response.status == 200)
        #expect(server.file == """
            {
              "updatedAt": "2000-01-01T00:00:00Z",
              "serverReceivedAt": "\(SettingsServer.stamp)"
            }
            """)
        #expect(server.send("GET").status == 200)
    }

    @Test func aPythonWrittenFileWithNonFiniteNumbersIsServed() throws {
        try server.storeByHand("{\n  \"w\": NaN,\n  \"x\": Infinity,\n  \"y\": -Infinity,\n  \"z\": [\n    NaN\n  ]\n}")
        let response = server.send("GET")
        #expect(response.status == 200)
        #expect(response.text == #"{"w": NaN, "x": Infinity, "y": -Infinity, "z": [NaN]}"#)
    }

    @Test func aPythonWrittenFileIsRewrittenByteForByteExceptTheServerStamp() throws {
        try server.storeByHand(Self.pythonFile)
        #expect(server.patch("{}").status == 200)
        #expect(server.file == Self.pythonFile.replacingOccurrences(of: "20250101T000000.000000Z", with: SettingsServer.stamp))
    }

    /// Python's json module nests as deep as its recursion limit (~1000), and a
    /// data directory moves both ways (docs/API.md §3): the 64-level limit is for
    /// request bodies, not for documents already stored.
    @Test func aPythonWrittenFileNestedDeeperThan64LevelsIsServed() throws {
        var value = JSONValue.object(JSONObject())
        for _ in 1..<70 { value = .object(JSONObject([JSONMember("a", value)])) }
        try server.storeByHand(prettyText(value))
        let response = server.send("GET")
        #expect(response.status == 200)
        #expect(response.text == compactText(value))
    }

    @Test func eachKeySeesOnlyItsOwnDocument() {
        server.send("PUT", #"{"owner": "u1"}"#)
        #expect(server.send("GET", key: "u2").text == SettingsServer.notFoundBody)
        #expect(server.send("GET", key: "U1").status == 404)
        #expect(server.data.entries("user_settings") == ["u1.json"])
    }

    @Test func aFolderWhereTheFileShouldBeIsAReadFailure() throws {
        try server.data.write("", to: "user_settings/u1.json/inside")
        let response = server.send("GET")
        #expect(response.status == 500)
        #expect(response.text == #"{"error": "reading the stored data failed"}"#)
    }
}
