import Foundation
import MockCloudTestSupport
import Testing

/// `inbox` run as a process, as fcgiwrap runs it.
@Suite struct InboxProgramTests {
    let data: TemporaryDirectory
    let program: ProgramRunner

    init() throws {
        data = try TemporaryDirectory(prefix: "mockcloud-e2e")
        program = ProgramRunner(program: "inbox", dataDirectory: URL(fileURLWithPath: data.path))
    }

    @Test func putCreatesThenARetryChangesNothingThenAHigherVersionReplaces() throws {
        let headers = ["X-User-Key": "u1", "X-Device-Id": "mirror-1", "X-Sync-Version": "1"]
        let created = try program.run("PUT", "/inbox/nm-1234-weight", headers: headers, body: #"{"kg": 71.30}"#)
        #expect(created.statusLine == "201 Created")
        #expect(created.header("Location") == "/inbox/nm-1234-weight")
        let envelope = try #require(created.json)
        #expect(envelope["seq"] as? Int == 1 && envelope["source"] as? String == "mirror-1")
        #expect(created.body.hasSuffix(#", "body": {"kg": 71.30}}"#))

        let retry = try program.run("PUT", "/inbox/nm-1234-weight", headers: headers, body: #"{"kg": 71.30}"#)
        #expect(retry.statusLine == "200 OK")
        #expect(retry.body == created.body)

        var upgraded = headers
        upgraded["X-Sync-Version"] = "2"
        let replaced = try program.run("PUT", "/inbox/nm-1234-weight", headers: upgraded, body: #"{"kg": 71.3, "fat": 18.2}"#)
        #expect(replaced.status == 200)
        #expect(replaced.json?["seq"] as? Int == 2)

        let stale = try program.run("PUT", "/inbox/nm-1234-weight", headers: headers, body: #"{"kg": 1}"#)
        #expect(stale.statusLine == "409 Conflict")
        #expect((stale.json?["current"] as? [String: Any])?["version"] as? Int == 2)
    }

    @Test func postChoosesAUUIDAndTheFeedReturnsMessagesAndDeletionsWithAnAnchor() throws {
        let posted = try program.run("POST", "/inbox", headers: ["X-User-Key": "u1"], body: #"{"a": 1}"#)
        #expect(posted.status == 201)
        let location = try #require(posted.header("Location"))
        #expect(location.range(of: #"^/inbox/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"#, options: .regularExpression) != nil)
        #expect(try program.run("GET", location, headers: ["X-User-Key": "u1"]).body == posted.body)

        _ = try program.run("PUT", "/inbox/b", headers: ["X-User-Key": "u1"], body: "{}")
        let deleted = try program.run("DELETE", "/inbox/b", headers: ["X-User-Key": "u1"])
        #expect(deleted.statusLine == "204 No Content" && deleted.body.isEmpty)

        let page = try program.run("GET", "/inbox", headers: ["X-User-Key": "u1"])
        #expect(page.status == 200)
        let feed = try #require(page.json)
        #expect((feed["messages"] as? [[String: Any]])?.count == 1)
        #expect((feed["deleted"] as? [[String: Any]])?.first?["id"] as? String == "b")
        #expect(feed["hasMore"] as? Bool == false)
        let anchor = try #require(feed["anchor"] as? String)

        var empty = ProgramRunner.Output(status: 0, statusLine: "", headers: [], body: "", stderr: "", exitCode: 0)
        empty = try runFeed(query: "anchor=\(anchor)")
        #expect(empty.body == #"{"messages": [], "deleted": [], "anchor": "\#(anchor)", "hasMore": false}"#)
    }

    @Test(arguments: [
        ("anchor=nope", 400), ("limit=0", 400), ("limit=1001", 400), ("exclude-source=..", 400),
        ("anchor=0123456789abcdef.0.99", 410), ("anchor=0123456789abcdef.99", 400),
    ])
    func theFeedRefusesBadQueries(query: String, status: Int) throws {
        let out = try runFeed(query: query)
        #expect(out.status == status)
        #expect(out.header("Content-Type") == "application/json")
        if status == 410 { #expect((out.json?["error"] as? String)?.hasSuffix("restart without an anchor") == true) }
    }

    @Test func aMessageBodyOver256KiBIsA413AndNothingIsStored() throws {
        let body = "{\"a\": \"" + String(repeating: "x", count: 256 << 10) + "\"}"
        let out = try program.run("PUT", "/inbox/big", headers: ["X-User-Key": "u1"], body: body)
        #expect(out.statusLine == "413 Content Too Large")
        #expect(try program.run("GET", "/inbox/big", headers: ["X-User-Key": "u1"]).status == 404)
    }

    private func runFeed(query: String) throws -> ProgramRunner.Output {
        try program.run("GET", "/inbox", headers: ["X-User-Key": "u1"], extraEnvironment: ["QUERY_STRING": query])
    }
}
