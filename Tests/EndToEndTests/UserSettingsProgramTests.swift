import Foundation
import MockCloudTestSupport
import Testing

/// `user-settings` run as a process: environment + stdin in, `Status:` +
/// headers + JSON out, files on disk as the Python mock cloud writes them.
@Suite struct UserSettingsProgramTests {
    let data: TemporaryDirectory
    let program: ProgramRunner

    init() throws {
        data = try TemporaryDirectory(prefix: "mockcloud-e2e")
        program = ProgramRunner(program: "user-settings", dataDirectory: URL(fileURLWithPath: data.path))
    }

    static let document = #"{"updatedAt":"20260518T044304.095000Z","weightCalibrationFactor":0.9990998620664758}"#

    @Test func putStoresTheDocumentInThePythonLayoutAndAnswersWithIt() throws {
        let out = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: Self.document)
        #expect(out.statusLine == "200 OK")
        #expect(out.exitCode == 0)
        #expect(out.header("Content-Type") == "application/json")
        #expect(out.header("Content-Length") == String(out.body.utf8.count))
        let etag = try #require(out.header("ETag"))
        #expect(etag.count == 18 && etag.hasPrefix("\"") && etag.hasSuffix("\""))
        let stamp = try #require(out.json?["serverReceivedAt"] as? String)
        #expect(stamp.range(of: #"^\d{8}T\d{6}\.\d{6}Z$"#, options: .regularExpression) != nil)
        #expect(out.body == #"{"updatedAt": "20260518T044304.095000Z", "weightCalibrationFactor": 0.9990998620664758, "serverReceivedAt": "\#(stamp)"}"#)
        #expect(data.text(of: "user_settings/u1.json") == """
            {
              "updatedAt": "20260518T044304.095000Z",
              "weightCalibrationFactor": 0.9990998620664758,
              "serverReceivedAt": "\(stamp)"
            }
            """)
    }

    @Test func getAnswersTheStoredDocumentWithTheSameETagAsThePut() throws {
        let put = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: Self.document)
        let get = try program.run("GET", "/user/settings", headers: ["X-User-Key": "u1"])
        #expect(get.status == 200)
        #expect(get.body == put.body)
        #expect(get.header("ETag") == put.header("ETag"))
        let notModified = try program.run(
            "GET", "/user/settings", headers: ["X-User-Key": "u1", "If-None-Match": put.header("ETag")!])
        #expect(notModified.statusLine == "304 Not Modified")
        #expect(notModified.body.isEmpty)
        #expect(notModified.header("ETag") == put.header("ETag"))
    }

    @Test func getServesAFileWrittenByThePythonMockCloud() throws {
        try data.write("{\n  \"units\": \"metric\",\n  \"height\": 1.80\n}", to: "user_settings/py.json")
        let out = try program.run("GET", "/user/settings", headers: ["X-User-Key": "py"])
        #expect(out.status == 200)
        #expect(out.body == #"{"units": "metric", "height": 1.80}"#)
    }

    @Test(arguments: [
        ([:], 400, #"{"error": "X-User-Key header required"}"#),
        (["X-User-Key": ""], 400, #"{"error": "X-User-Key header required"}"#),
        (["X-User-Key": "../etc"], 400, #"{"error": "invalid X-User-Key shape"}"#),
        (["X-User-Key": String(repeating: "k", count: 129)], 400, #"{"error": "invalid X-User-Key shape"}"#),
        (["X-User-Key": "nobody"], 404, #"{"error": "no settings stored for this user"}"#),
    ])
    func getRefusesWithTheExactPythonErrors(headers: [String: String], status: Int, body: String) throws {
        let out = try program.run("GET", "/user/settings", headers: headers)
        #expect(out.status == status)
        #expect(out.body == body)
        #expect(out.header("Content-Type") == "application/json")
    }

    @Test(arguments: [
        ("not json", #"{"error": "body is not valid JSON"}"#),
        ("[1, 2]", #"{"error": "body must be a JSON object"}"#),
        ("{\"a\": \"\u{FFFD}\" ", #"{"error": "body is not valid JSON"}"#),
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), #"{"error": "JSON nested deeper than 64 levels"}"#),
    ])
    func putRefusesBadBodiesAndWritesNothing(body: String, expected: String) throws {
        let out = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: body)
        #expect(out.status == 400)
        #expect(out.body == expected)
        #expect(data.text(of: "user_settings/u1.json") == nil)
    }

    @Test func aBodyOverTheLimitIsReadWholeAndRefusedWith413() throws {
        let big = "{\"a\": \"" + String(repeating: "x", count: 1 << 20) + "\"}"
        let out = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: big)
        #expect(out.statusLine == "413 Content Too Large")
        #expect(out.body == #"{"error": "request body larger than this route's limit of 1048576 bytes"}"#)
    }

    @Test func aBodyExactlyAtTheLimitIsAccepted() throws {
        let padding = (1 << 20) - #"{"a": ""}"#.utf8.count
        let body = "{\"a\": \"" + String(repeating: "x", count: padding) + "\"}"
        #expect(body.utf8.count == 1 << 20)
        let out = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: body)
        #expect(out.status == 200)
    }

    @Test func aBodyShorterThanContentLengthIsA400() throws {
        let out = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: "{}", contentLength: "10")
        #expect(out.status == 400)
        #expect(out.body == #"{"error": "request body ended after 2 of the 10 bytes its Content-Length announced"}"#)
    }

    @Test func postIsRefusedWith405AndAllow() throws {
        let out = try program.run("POST", "/user/settings", headers: ["X-User-Key": "u1"], body: "{}")
        #expect(out.statusLine == "405 Method Not Allowed")
        #expect(out.header("Allow") == "GET, HEAD, PUT, PATCH, DELETE")
        #expect(out.json?["error"] as? String == "method POST not allowed on /user/settings; allowed: GET, HEAD, PUT, PATCH, DELETE")
    }

    @Test func anotherPathIsA404() throws {
        let out = try program.run("GET", "/user/settings/x", headers: ["X-User-Key": "u1"])
        #expect(out.status == 404)
        #expect(out.body == #"{"error": "not found"}"#)
    }

    @Test func olderUpdatedAtIsA409WithCurrentAndLeavesTheFile() throws {
        _ = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: Self.document)
        let before = data.text(of: "user_settings/u1.json")
        let out = try program.run(
            "PUT", "/user/settings", headers: ["X-User-Key": "u1"],
            body: #"{"updatedAt":"2026-05-18T06:43:04.094+02:00","weightCalibrationFactor":1}"#)
        #expect(out.statusLine == "409 Conflict")
        let current = try #require(out.json?["current"] as? [String: Any])
        #expect(current["updatedAt"] as? String == "20260518T044304.095000Z")
        #expect(data.text(of: "user_settings/u1.json") == before)
    }

    @Test func ifMatchWithAStaleTagIsA412WithCurrent() throws {
        _ = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: Self.document)
        let out = try program.run(
            "PUT", "/user/settings", headers: ["X-User-Key": "u1", "If-Match": "\"0000000000000000\""], body: "{}")
        #expect(out.statusLine == "412 Precondition Failed")
        #expect(out.json?["current"] is [String: Any])
    }

    @Test func patchMergesInPlaceAndDeleteRemoves() throws {
        _ = try program.run("PUT", "/user/settings", headers: ["X-User-Key": "u1"], body: #"{"a":1,"b":{"c":2,"d":3},"e":4}"#)
        let patched = try program.run(
            "PATCH", "/user/settings",
            headers: ["X-User-Key": "u1", "Content-Type": "application/merge-patch+json"],
            body: #"{"b":{"c":null,"x":5},"a":10,"e":null,"f":true}"#)
        #expect(patched.status == 200)
        // serverReceivedAt (from the PUT) is replaced in place; "f" is new, so it comes last.
        let stamp = try #require(patched.json?["serverReceivedAt"] as? String)
        #expect(patched.body == #"{"a": 10, "b": {"d": 3, "x": 5}, "serverReceivedAt": "\#(stamp)", "f": true}"#)
        let deleted = try program.run("DELETE", "/user/settings", headers: ["X-User-Key": "u1"])
        #expect(deleted.statusLine == "204 No Content")
        #expect(deleted.body.isEmpty)
        #expect(try program.run("DELETE", "/user/settings", headers: ["X-User-Key": "u1"]).status == 404)
        #expect(data.text(of: "user_settings/u1.json") == nil)
    }

    @Test func aMissingDataDirectorySettingIsA500ThatSaysSo() throws {
        let out = try program.run(
            "GET", "/user/settings", headers: ["X-User-Key": "u1"], extraEnvironment: ["MOCKCLOUD_DATA": ""])
        #expect(out.status == 500)
        #expect(out.body == #"{"error": "server misconfigured: MOCKCLOUD_DATA is not set"}"#)
        #expect(out.stderr.contains("MOCKCLOUD_DATA is not set"))
    }
}
