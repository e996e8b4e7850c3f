import Foundation
import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// PUT: a JSON object, stamped and stored in the Python layout.
@Suite struct SettingsPutTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    @Test func anEmptyBodyIsStoredAsAnEmptyObjectWithServerReceivedAt() {
        let response = server.send("PUT", "")
        #expect(response.status == 200)
        #expect(response.text == #"{"serverReceivedAt": "20260518T044304.134233Z"}"#)
        #expect(server.file == "{\n  \"serverReceivedAt\": \"20260518T044304.134233Z\"\n}")
        #expect(response.headers == [.init("ETag", server.etag ?? "")])
    }

    @Test func putAnswers200WithTheStoredDocumentAndItsTag() {
        let response = server.send("PUT", #"{"b":1,"a":[true,null]}"#)
        #expect(response.wire
            == "Status: 200 OK\r\nContent-Type: application/json\r\nETag: \(server.etag ?? "")\r\nContent-Length: 74\r\n\r\n"
            + #"{"b": 1, "a": [true, null], "serverReceivedAt": "20260518T044304.134233Z"}"#)
    }

    /// Python's `json.dumps(doc, indent=2)`, checked with python3, except that
    /// `1.50e3` keeps its text where Python would write `1500.0`.
    @Test func theFileIsPythonsIndentTwoLayoutWithTheClientsNumberText() {
        let body = #"{"updatedAt":"20260518T044304.095Z","factor":0.9990998620664758,"big":12345678901234567890,"#
            + #""sci":1.50e3,"negZero":-0.0,"two":2.0,"name":"café 😀","clé":"x","ctl":"a\u0001\u001fb"# + "\u{7F}"
            + #"","esc":"\/a\/b","quote":"\"\\","ws":"\n\r\t\b\f","#
            + #""nested":{"list":[1,2.5,{"x":null}],"empty":{},"none":[]},"flags":[true,false,null]}"#
        let response = server.send("PUT", body)
        #expect(response.status == 200)
        #expect(server.file == #"""
            {
              "updatedAt": "20260518T044304.095Z",
              "factor": 0.9990998620664758,
              "big": 12345678901234567890,
              "sci": 1.50e3,
              "negZero": -0.0,
              "two": 2.0,
              "name": "caf\u00e9 \ud83d\ude00",
              "cl\u00e9": "x",
              "ctl": "a\u0001\u001fb\u007f",
              "esc": "/a/b",
              "quote": "\"\\",
              "ws": "\n\r\t\b\f",
              "nested": {
                "list": [
                  1,
                  2.5,
                  {
                    "x": null
                  }
                ],
                "empty": {},
                "none": []
              },
              "flags": [
                true,
                false,
                null
              ],
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """#)
        #expect(response.text == #"{"updatedAt": "20260518T044304.095Z", "factor": 0.9990998620664758, "#
            + #""big": 12345678901234567890, "sci": 1.50e3, "negZero": -0.0, "two": 2.0, "#
            + #""name": "caf\u00e9 \ud83d\ude00", "cl\u00e9": "x", "ctl": "a\u0001\u001fb\u007f", "esc": "/a/b", "#
            + #""quote": "\"\\", "ws": "\n\r\t\b\f", "nested": {"list": [1, 2.5, {"x": null}], "empty": {}, "#
            + #""none": []}, "flags": [true, false, null], "serverReceivedAt": "20260518T044304.134233Z"}"#)
    }

    @Test func serverReceivedAtSentByTheClientIsReplacedInPlace() {
        server.send("PUT", #"{"a": 1, "serverReceivedAt": "from the client", "b": 2}"#)
        #expect(server.file == """
            {
              "a": 1,
              "serverReceivedAt": "20260518T044304.134233Z",
              "b": 2
            }
            """)
    }

    @Test func serverReceivedAtIsAppendedLastWhenAbsent() {
        server.send("PUT", #"{"z": 1, "a": 2}"#)
        #expect(server.file == """
            {
              "z": 1,
              "a": 2,
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """)
    }

    @Test func putReplacesTheWholeDocument() {
        server.send("PUT", #"{"a": 1, "b": 2}"#)
        server.send("PUT", #"{"c": 3}"#)
        #expect(server.file == "{\n  \"c\": 3,\n  \"serverReceivedAt\": \"20260518T044304.134233Z\"\n}")
    }

    @Test func writesLeaveOnlyTheDocumentAndItsLock() {
        server.send("PUT", #"{"a": 1}"#)
        server.send("PUT", #"{"a": 2}"#)
        #expect(server.data.entries() == [".locks", "user_settings"])
        #expect(server.data.entries("user_settings") == ["u1.json"])
        #expect(server.data.mode(of: "user_settings") == 0o700)
        #expect(server.data.mode(of: "user_settings/u1.json") == 0o600)
    }

    @Test(arguments: ["[]", "[1]", #""x""#, "1", "-0.5", "null", "true", "false"])
    func aBodyThatIsNotAnObjectIs400AndNothingIsStored(_ body: String) {
        let response = server.send("PUT", body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "body must be a JSON object"}"#)
        #expect(server.data.entries() == [])
    }

    @Test(arguments: [
        "{", "}", " ", "{\"a\":1,}", "{'a':1}", "{\"a\":NaN}", "{\"a\":1}x", "{\"a\":01}", "{\"a\":\"\u{1}\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":True}",
    ])
    func aBodyThatIsNotJSONIs400AndTheStoredFileIsUntouched(_ body: String) throws {
        server.send("PUT", #"{"kept": true}"#)
        let before = try #require(server.fileBytes)
        let response = server.send("PUT", body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "body is not valid JSON"}"#)
        #expect(server.fileBytes == before)
    }

    @Test func aBodyThatIsNotUTF8Is400() {
        let response = server.send("PUT", bytes: [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D])
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "body is not valid JSON"}"#)
        #expect(server.file == nil)
    }

    /// `{"a": … {}}` with `levels` nested objects.
    static func nested(_ levels: Int) -> String {
        String(repeating: #"{"a":"#, count: levels - 1) + "{}" + String(repeating: "}", count: levels - 1)
    }

    @Test func sixtyFourLevelsAreStoredAndServed() throws {
        #expect(server.send("PUT", Self.nested(64)).status == 200)
        let file = try #require(server.file)
        #expect(file.hasPrefix("{\n  \"a\": {\n    \"a\": {\n"))
        #expect(file.hasSuffix("\n  },\n  \"serverReceivedAt\": \"20260518T044304.134233Z\"\n}"))
        #expect(server.send("GET").status == 200)
    }

    @Test func sixtyFiveLevelsAre400WithAClearError() {
        let response = server.send("PUT", Self.nested(65))
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "JSON nested deeper than 64 levels"}"#)
        #expect(server.file == nil)
    }

    @Test func aMatchingIfMatchWrites() throws {
        server.send("PUT", #"{"v": 1}"#)
        let etag = try #require(server.etag)
        #expect(server.send("PUT", #"{"v": 2}"#, headers: ["If-Match": etag]).status == 200)
        #expect(server.file?.contains("\"v\": 2") == true)
    }

    // W/ETAG: the tag as nginx sends it on a gzipped answer (docs/API.md §3).
    @Test(arguments: ["*", "\"0000000000000000\", ETAG", "W/ETAG"])
    func anIfMatchListOrStarThatCoversTheStoredTagWrites(_ header: String) throws {
        server.send("PUT", #"{"v": 1}"#)
        let etag = try #require(server.etag)
        #expect(server.send("PUT", #"{"v": 2}"#, headers: ["If-Match": header.replacingETAG(with: etag)]).status == 200)
    }

    @Test(arguments: ["\"0000000000000000\"", "W/\"0000000000000000\"", "\"0000000000000000\", \"1111111111111111\""])
    func anIfMatchThatDoesNotMatchIs412WithTheCurrentDocument(_ header: String) throws {
        server.send("PUT", #"{"v": 1}"#)
        let before = try #require(server.fileBytes)
        let etag = EntityTag(of: before).text
        let response = server.send("PUT", #"{"v": 2}"#, headers: ["If-Match": header.replacingETAG(with: etag)])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match does not match the stored settings' ETag", "#
            + #""current": {"v": 1, "serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", etag)])
        #expect(server.fileBytes == before)
    }

    @Test(arguments: ["\"cbf29ce484222325\"", "*"])
    func anyIfMatchWhenNothingIsStoredIs412WithoutCurrent(_ header: String) {
        let response = server.send("PUT", #"{"v": 1}"#, headers: ["If-Match": header])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match given but no settings are stored for this user"}"#)
        #expect(response.headers == [])
        #expect(server.file == nil)
    }

    @Test(arguments: ["*", "ETAG", "\"0000000000000000\", ETAG"])
    func ifNoneMatchThatMatchesTheStoredDocumentIs412WithCurrent(_ header: String) throws {
        server.send("PUT", #"{"v": 1}"#)
        let before = try #require(server.fileBytes)
        let response = server.send("PUT", #"{"v": 2}"#, headers: ["If-None-Match": header.replacingETAG(with: EntityTag(of: before).text)])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-None-Match matches the stored settings", "#
            + #""current": {"v": 1, "serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag(of: before).text)])
        #expect(server.fileBytes == before)
    }

    @Test func ifNoneMatchStarWhenNothingIsStoredCreates() {
        let response = server.send("PUT", #"{"v": 1}"#, headers: ["If-None-Match": "*"])
        #expect(response.status == 200)
        #expect(server.file == "{\n  \"v\": 1,\n  \"serverReceivedAt\": \"20260518T044304.134233Z\"\n}")
    }

    @Test func ifNoneMatchWithAnotherTagWrites() {
        server.send("PUT", #"{"v": 1}"#)
        #expect(server.send("PUT", #"{"v": 2}"#, headers: ["If-None-Match": "\"0000000000000000\""]).status == 200)
        #expect(server.file?.contains("\"v\": 2") == true)
    }

    @Test func whenNoTemporaryFileCanBeMadeThePutIs500AndTheStoredDocumentIsServedUnchanged() throws {
        server.send("PUT", #"{"v": 1}"#)
        let before = try #require(server.fileBytes)
        // The temporary name is taken by a directory, which unlink cannot remove.
        try FileManager.default.createDirectory(
            atPath: server.data.file("user_settings/.~u1.json"), withIntermediateDirectories: false)
        let response = server.send("PUT", #"{"v": 2}"#)
        #expect(response.status == 500)
        #expect(response.text == #"{"error": "storage failed; nothing was written and the stored data is unchanged"}"#)
        #expect(server.fileBytes == before)
        #expect(server.send("GET").text == #"{"v": 1, "serverReceivedAt": "20260518T044304.134233Z"}"#)
    }

    @Test func aDataRootThatIsAFileIs500ForWritesAndReads() throws {
        try server.data.write("a file", to: "root")
        let route = SettingsRoute(dataRoot: server.data.file("root"), clock: { 0 })
        for (method, message) in [
            ("PUT", "storage failed; nothing was written and the stored data is unchanged"),
            ("GET", "reading the stored data failed"),
        ] {
            let request = CGIRequest(method: method, path: Endpoint.settings.path, headers: ["X-User-Key": "u1"])
            #expect {
                _ = try route.respond(to: request)
            } throws: { error in
                (error as? StorageError)?.status == 500 && (error as? StorageError)?.message == message
            }
        }
        #expect(server.data.text(of: "root") == "a file")
    }
}
