import Foundation
import Glibc
import MockCloudCore
import Testing

/// A `SettingsRoute` over a fresh data directory with a fixed clock; requests
/// are answered as the CGI edge answers them (errors become JSON answers).
struct SettingsServer {
    /// 2026-05-18T04:43:04.134233Z, the clock every write sees.
    static let now: Timestamp.Micros = 1_779_079_384_134_233
    static let stamp = "20260518T044304.134233Z"
    static let notFoundBody = #"{"error": "no settings stored for this user"}"#

    let data: TemporaryDirectory
    let route: SettingsRoute

    init() throws {
        data = try TemporaryDirectory()
        route = SettingsRoute(dataRoot: data.path, clock: { SettingsServer.now })
    }

    @discardableResult
    func send(
        _ method: String, _ body: String = "", key: String? = "u1", headers: [String: String] = [:],
        contentType: String = "", path: String = SettingsRoute.path
    ) -> CGIResponse {
        send(method, bytes: Array(body.utf8), key: key, headers: headers, contentType: contentType, path: path)
    }

    func send(
        _ method: String, bytes: [UInt8], key: String? = "u1", headers: [String: String] = [:],
        contentType: String = "", path: String = SettingsRoute.path
    ) -> CGIResponse {
        var all = headers
        if let key { all["X-User-Key"] = key }
        let request = CGIRequest(method: method, path: path, headers: all, contentType: contentType, body: bytes)
        return answer { try route.respond(to: request) }
    }

    /// `PATCH` with the merge-patch content type.
    @discardableResult
    func patch(_ body: String, headers: [String: String] = [:]) -> CGIResponse {
        send("PATCH", body, headers: headers, contentType: "application/merge-patch+json")
    }

    /// The stored file of `u1`, as text and as bytes.
    var file: String? { data.text(of: "user_settings/u1.json") }
    var fileBytes: [UInt8]? { data.bytes(of: "user_settings/u1.json") }
    /// The strong tag of the stored file.
    var etag: String? { fileBytes.map(EntityTag.of) }

    /// Writes `u1`'s file as the Python mock cloud (or a person) would.
    func storeByHand(_ text: String) throws {
        try data.write(text, to: "user_settings/u1.json")
    }
}

/// Strong tags over the stored bytes, and the RFC 7232 list rules.
@Suite struct EntityTagTests {
    @Test(arguments: [("", "\"cbf29ce484222325\""), ("a", "\"af63dc4c8601ec8c\""), ("foobar", "\"85944171f73967e8\"")])
    func theTagIsFNV1a64OfTheBytesIn16QuotedHexDigits(_ text: String, _ tag: String) {
        #expect(EntityTag.of(Array(text.utf8)) == tag)
    }

    @Test(arguments: [
        (nil, "\"a\"", true), ("\"a\"", "\"a\"", true), ("\"b\", \"a\"", "\"a\"", true), ("*", "\"a\"", true),
        ("a", "\"a\"", true), ("\"b\"", "\"a\"", false), ("W/\"a\"", "\"a\"", false), ("", "\"a\"", false),
        ("\"a\"", nil, false), ("*", nil, false), (nil, nil, true),
    ] as [(String?, String?, Bool)])
    func ifMatchUsesStrongComparisonAndFailsWhenNothingIsStored(_ header: String?, _ current: String?, _ passes: Bool) {
        #expect(EntityTag.ifMatchPasses(header, current: current) == passes)
    }

    @Test(arguments: [
        (nil, "\"a\"", true), ("\"a\"", "\"a\"", false), ("W/\"a\"", "\"a\"", false), ("\"b\",\"a\"", "\"a\"", false),
        ("*", "\"a\"", false), ("\"b\"", "\"a\"", true), ("\"b\", W/\"c\"", "\"a\"", true), ("*", nil, true),
        ("\"a\"", nil, true),
    ] as [(String?, String?, Bool)])
    func ifNoneMatchUsesWeakComparison(_ header: String?, _ current: String?, _ passes: Bool) {
        #expect(EntityTag.ifNoneMatchPasses(header, current: current) == passes)
    }
}

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
        #expect(response.headers == [.init("ETag", EntityTag.of(Array(Self.pythonFile.utf8)))])
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
        #expect(response.status == status)
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
    /// data directory moves both ways (CONTRACT §3): the 64-level limit is for
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

    @Test(arguments: ["*", "\"0000000000000000\", ETAG"])
    func anIfMatchListOrStarThatCoversTheStoredTagWrites(_ header: String) throws {
        server.send("PUT", #"{"v": 1}"#)
        let etag = try #require(server.etag)
        #expect(server.send("PUT", #"{"v": 2}"#, headers: ["If-Match": header.replacingETAG(with: etag)]).status == 200)
    }

    @Test(arguments: ["\"0000000000000000\"", "W/ETAG", "\"0000000000000000\", \"1111111111111111\""])
    func anIfMatchThatDoesNotMatchIs412WithTheCurrentDocument(_ header: String) throws {
        server.send("PUT", #"{"v": 1}"#)
        let before = try #require(server.fileBytes)
        let etag = EntityTag.of(before)
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
        let response = server.send("PUT", #"{"v": 2}"#, headers: ["If-None-Match": header.replacingETAG(with: EntityTag.of(before))])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-None-Match matches the stored settings", "#
            + #""current": {"v": 1, "serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag.of(before))])
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
            let request = CGIRequest(method: method, path: SettingsRoute.path, headers: ["X-User-Key": "u1"])
            #expect {
                _ = try route.respond(to: request)
            } throws: { error in
                (error as? StorageError)?.status == 500 && (error as? StorageError)?.message == message
            }
        }
        #expect(server.data.text(of: "root") == "a file")
    }
}

/// Last writer wins by the client's `updatedAt`, compared as instants.
@Suite struct SettingsLastWriterWinsTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    @Test func putOlderUpdatedAtIsRejectedWithCurrentDocument() throws {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z", "v": 1}"#)
        let before = try #require(server.fileBytes)
        let response = server.send("PUT", #"{"updatedAt": "20260518T044304.094Z", "v": 2}"#)
        #expect(response.status == 409)
        #expect(response.text
            == #"{"error": "updatedAt 20260518T044304.094Z is older than the stored updatedAt 20260518T044304.095Z; "#
            + #"nothing was written", "current": {"updatedAt": "20260518T044304.095Z", "v": 1, "#
            + #""serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag.of(before))])
        #expect(server.fileBytes == before)
    }

    @Test(arguments: ["20260518T044304.095Z", "20260518T044304.096Z", "2027-01-01T00:00:00Z"])
    func putEqualOrNewerUpdatedAtIsWritten(_ incoming: String) {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z", "v": 1}"#)
        let response = server.send("PUT", #"{"updatedAt": "\#(incoming)", "v": 2}"#)
        #expect(response.status == 200)
        #expect(server.file == """
            {
              "updatedAt": "\(incoming)",
              "v": 2,
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """)
    }

    /// (stored, incoming, written): the forms are instants, not text.
    @Test(arguments: [
        ("20260518T044304.095Z", "2026-05-18T06:43:04.095+02:00", true),
        ("2026-05-18T06:43:04.095+02:00", "20260518T044304.095Z", true),
        ("2026-05-18T04:43:04.095Z", "20260518T064304.095+0200", true),
        ("20260517T234304.095-0500", "2026-05-18T04:43:04.095Z", true),
        ("20260518T044304.095Z", "2026-05-18T06:43:04.094+02:00", false),
        ("2026-05-18T04:43:04Z", "2026-05-18T05:43:04+02:00", false),
        ("2026-05-18T05:43:04+02:00", "2026-05-18T04:43:04Z", true),
        ("20260518T044304.095000Z", "20260518T044304.0949999Z", false),
        ("20260518T044304.095000Z", "20260518T044304.0950009Z", true),
        ("20260518T044304.095001Z", "20260518T044304.095Z", false),
    ])
    func updatedAtFormsAreComparedAsInstants(_ stored: String, _ incoming: String, _ written: Bool) {
        server.send("PUT", #"{"updatedAt": "\#(stored)", "v": 1}"#)
        let response = server.send("PUT", #"{"updatedAt": "\#(incoming)", "v": 2}"#)
        #expect(response.status == (written ? 200 : 409))
        #expect(server.file?.contains(written ? "\"v\": 2" : "\"v\": 1") == true)
    }

    /// (stored updatedAt, incoming updatedAt) as JSON text; `nil` leaves the field out.
    @Test(arguments: [
        (#""yesterday""#, #""2000-01-01T00:00:00Z""#),
        (#""20260518T044304.095Z""#, #""garbage""#),
        (#""20260518T044304.095Z""#, "0"),
        (#""20260518T044304.095Z""#, "null"),
        (#""20260518T044304.095Z""#, #"["2000-01-01T00:00:00Z"]"#),
        ("1779079384", #""2000-01-01T00:00:00Z""#),
        (#""2026-05-18T04:43:04""#, #""2000-01-01T00:00:00Z""#),
        (nil, #""2000-01-01T00:00:00Z""#),
        (#""20260518T044304.095Z""#, nil),
    ] as [(String?, String?)])
    func anUnparseableOrMissingUpdatedAtOnEitherSideIsWritten(_ stored: String?, _ incoming: String?) {
        server.send("PUT", stored.map { #"{"updatedAt": \#($0), "v": 1}"# } ?? #"{"v": 1}"#)
        let response = server.send("PUT", incoming.map { #"{"updatedAt": \#($0), "v": 2}"# } ?? #"{"v": 2}"#)
        #expect(response.status == 200)
        #expect(server.file?.contains("\"v\": 2") == true)
    }

    @Test func aStoredFileThatIsNotJSONNeverBlocksAWrite() throws {
        try server.storeByHand(#"{"updatedAt": "2099-01-01T00:00:00Z", "#)
        #expect(server.send("PUT", #"{"updatedAt": "2000-01-01T00:00:00Z"}"#).status == 200)
    }

    @Test func preconditionsAreCheckedBeforeLastWriterWins() throws {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z"}"#)
        let older = #"{"updatedAt": "2000-01-01T00:00:00Z"}"#
        #expect(server.send("PUT", older, headers: ["If-Match": "\"0000000000000000\""]).status == 412)
        #expect(server.send("PUT", older, headers: ["If-Match": server.etag ?? ""]).status == 409)
    }
}

/// PATCH: RFC 7396 on the stored document, in place, with PUT's rules.
@Suite struct SettingsPatchTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    static let stored = #"""
        {
          "updatedAt": "20260518T044304.095Z",
          "units": {
            "weight": "kg",
            "height": "cm"
          },
          "goal": 70.50,
          "remove": true,
          "serverReceivedAt": "20250101T000000.000000Z"
        }
        """#

    @Test func aMergePatchReplacesInPlaceRemovesNullsMergesNestedAndAppendsNewFields() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(
            #"{"units": {"weight": "lb", "height": null, "temp": "C"}, "remove": null, "goal": 1.50e3, "new": [1, 2]}"#)
        #expect(response.status == 200)
        #expect(server.file == """
            {
              "updatedAt": "20260518T044304.095Z",
              "units": {
                "weight": "lb",
                "temp": "C"
              },
              "goal": 1.50e3,
              "serverReceivedAt": "20260518T044304.134233Z",
              "new": [
                1,
                2
              ]
            }
            """)
        #expect(response.text == #"{"updatedAt": "20260518T044304.095Z", "units": {"weight": "lb", "temp": "C"}, "#
            + #""goal": 1.50e3, "serverReceivedAt": "20260518T044304.134233Z", "new": [1, 2]}"#)
        #expect(response.headers == [.init("ETag", server.etag ?? "")])
    }

    @Test func anEmptyPatchOnlyRestampsTheDocument() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch("{}").status == 200)
        #expect(server.file == Self.stored.replacingOccurrences(of: "20250101T000000.000000Z", with: SettingsServer.stamp))
    }

    @Test func aServerReceivedAtInThePatchIsOverwrittenByTheServer() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"serverReceivedAt": "client"}"#).status == 200)
        #expect(server.file == Self.stored.replacingOccurrences(of: "20250101T000000.000000Z", with: SettingsServer.stamp))
    }

    @Test(arguments: [
        "application/merge-patch+json", "application/merge-patch+json; charset=utf-8",
        "Application/Merge-Patch+JSON", " application/merge-patch+json ;charset=UTF-8",
    ])
    func theMergePatchContentTypeIsAcceptedWithParametersAndAnyCase(_ contentType: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.send("PATCH", #"{"goal": 1}"#, contentType: contentType)
        #expect(response.status == 200)
        #expect(server.file?.contains("\"goal\": 1,") == true)
    }

    @Test(arguments: [
        ("", "none"), ("application/json", "application/json"), ("text/plain", "text/plain"),
        ("application/merge-patch", "application/merge-patch"),
        ("application/json-patch+json", "application/json-patch+json"),
        ("application/json; profile=merge-patch+json", "application/json; profile=merge-patch+json"),
    ])
    func anyOtherContentTypeIs415AndNothingChanges(_ contentType: String, _ named: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.send("PATCH", #"{"goal": 1}"#, contentType: contentType)
        #expect(response.status == 415)
        #expect(response.text == #"{"error": "Content-Type must be application/merge-patch+json (got \#(named))"}"#)
        #expect(server.file == Self.stored)
    }

    @Test func patchWhenNothingIsStoredIs404AndCreatesNothing() {
        let response = server.patch(#"{"a": 1}"#)
        #expect(response.status == 404)
        #expect(response.text == SettingsServer.notFoundBody)
        #expect(server.data.entries("user_settings") == [])
    }

    @Test(arguments: ["[]", #"[{"a": 1}]"#, #""x""#, "null", "1", "true"])
    func aPatchThatIsNotAnObjectIs400(_ body: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "merge patch must be a JSON object"}"#)
        #expect(server.file == Self.stored)
    }

    @Test(arguments: ["", "{", #"{"a":}"#, "{\"a\":1}}"])
    func aPatchThatIsNotJSONIs400(_ body: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "body is not valid JSON"}"#)
        #expect(server.file == Self.stored)
    }

    @Test func aPatchNestedTooDeeplyIs400() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(SettingsPutTests.nested(65))
        #expect(response.text == #"{"error": "JSON nested deeper than 64 levels"}"#)
    }

    @Test func aPatchWithAnOlderUpdatedAtIs409AndTheFileIsUntouched() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(#"{"updatedAt": "2026-05-18T06:43:04.094+02:00", "goal": 1}"#)
        #expect(response.status == 409)
        #expect(response.text
            == #"{"error": "updatedAt 2026-05-18T06:43:04.094+02:00 is older than the stored updatedAt "#
            + #"20260518T044304.095Z; nothing was written", "current": {"updatedAt": "20260518T044304.095Z", "#
            + #""units": {"weight": "kg", "height": "cm"}, "goal": 70.50, "remove": true, "#
            + #""serverReceivedAt": "20250101T000000.000000Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag.of(Array(Self.stored.utf8)))])
        #expect(server.file == Self.stored)
    }

    @Test(arguments: [
        (#"{"goal": 1}"#, "20260518T044304.095Z"),
        (#"{"updatedAt": "2026-05-18T06:43:04.095+02:00"}"#, "2026-05-18T06:43:04.095+02:00"),
        (#"{"updatedAt": "2030-01-01T00:00:00Z"}"#, "2030-01-01T00:00:00Z"),
    ])
    func aPatchWithoutOrWithAnEqualOrNewerUpdatedAtIsWritten(_ patch: String, _ updatedAt: String) throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(patch).status == 200)
        #expect(server.file?.hasPrefix("{\n  \"updatedAt\": \"\(updatedAt)\",\n") == true)
    }

    @Test func aPatchThatRemovesUpdatedAtIsWritten() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"updatedAt": null}"#).status == 200)
        #expect(server.file?.hasPrefix("{\n  \"units\": {") == true)
    }

    @Test func aPatchWithAStaleIfMatchIs412WithCurrent() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(#"{"goal": 1}"#, headers: ["If-Match": "\"0000000000000000\""])
        #expect(response.status == 412)
        #expect(response.text.hasPrefix(
            #"{"error": "precondition failed: If-Match does not match the stored settings' ETag", "current": {"updatedAt": "#))
        #expect(response.header("ETag") == EntityTag.of(Array(Self.stored.utf8)))
        #expect(server.file == Self.stored)
    }

    @Test func aPatchWithTheCurrentIfMatchIsWritten() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"goal": 1}"#, headers: ["If-Match": server.etag ?? ""]).status == 200)
        #expect(server.file?.contains("\"goal\": 1,") == true)
    }

    @Test func aPatchWithIfMatchWhenNothingIsStoredIs412() {
        let response = server.patch(#"{"goal": 1}"#, headers: ["If-Match": "*"])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match given but no settings are stored for this user"}"#)
    }

    @Test func aPatchOnAStoredFileThatIsNotJSONIs500AndChangesNothing() throws {
        try server.storeByHand("not json")
        let response = server.patch(#"{"a": 1}"#)
        #expect(response.status == 500)
        #expect(response.text == #"{"error": "the stored settings for this user are not valid JSON"}"#)
        #expect(server.file == "not json")
    }
}

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
        #expect(response.headers == [.init("ETag", EntityTag.of(before))])
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

/// Path, method and key are checked first, before anything touches the disk.
@Suite struct SettingsRequestCheckTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    static let allow = "GET, HEAD, PUT, PATCH, DELETE"

    @Test(arguments: ["POST", "OPTIONS", "TRACE", "CONNECT", "get", "put"])
    func otherMethodsAre405WithAllow(_ method: String) {
        let response = server.send(method, #"{"a": 1}"#)
        #expect(response.status == 405)
        #expect(response.headers == [.init("Allow", Self.allow)])
        #expect(response.text == #"{"error": "method \#(method) not allowed on /user/settings; allowed: \#(Self.allow)"}"#)
        #expect(server.data.entries() == [])
    }

    @Test func postIs405EvenWithoutAKey() {
        let response = server.send("POST", key: nil)
        #expect(response.wire
            == "Status: 405 Method Not Allowed\r\nContent-Type: application/json\r\nAllow: \(Self.allow)\r\n"
            + "Content-Length: 94\r\n\r\n"
            + #"{"error": "method POST not allowed on /user/settings; allowed: GET, HEAD, PUT, PATCH, DELETE"}"#)
    }

    @Test(arguments: [
        "/user/settings/", "/user/setting", "/user/settings.json", "/user/settings/x", "/", "/user", "/inbox",
        "/USER/SETTINGS", "", "//user/settings",
    ])
    func otherPathsAre404(_ path: String) {
        for method in ["GET", "PUT"] {
            let response = server.send(method, #"{"a": 1}"#, path: path)
            #expect(response.status == 404)
            #expect(response.text == #"{"error": "not found"}"#)
        }
        #expect(server.data.entries() == [])
    }

    @Test(arguments: ["GET", "HEAD", "PUT", "PATCH", "DELETE"])
    func aMissingOrEmptyKeyIs400(_ method: String) {
        for key in [nil, ""] as [String?] {
            let response = server.send(method, "{}", key: key, contentType: "application/merge-patch+json")
            #expect(response.status == 400)
            #expect(response.text == #"{"error": "X-User-Key header required"}"#)
        }
        #expect(server.data.entries() == [])
    }

    @Test(arguments: [
        "../etc", "..", ".", "../user_settings/u2", "u1/../u2", "/etc/passwd", "u1.json", "a b", "u1\n", "u1\0",
        "é", "ü1", "😀", "%2e%2e", String(repeating: "k", count: 129),
    ])
    func aKeyOfAnyOtherShapeIs400AndTouchesNoPath(_ key: String) {
        for method in ["PUT", "GET", "DELETE"] {
            let response = server.send(method, #"{"a": 1}"#, key: key)
            #expect(response.status == 400)
            #expect(response.text == #"{"error": "invalid X-User-Key shape"}"#)
        }
        #expect(server.data.entries() == [])
    }

    @Test(arguments: [String(repeating: "k", count: 128), "A-z_0-9", "-", "_"])
    func keysOfTheAllowedShapeNameTheirFile(_ key: String) {
        #expect(server.send("PUT", "{}", key: key).status == 200)
        #expect(server.data.entries("user_settings") == [key + ".json"])
        #expect(server.send("GET", key: key).status == 200)
    }
}

extension String {
    /// Puts the stored document's tag where a test table wrote `ETAG`.
    fileprivate func replacingETAG(with etag: String) -> String {
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

