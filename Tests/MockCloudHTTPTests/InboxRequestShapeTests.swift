import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxRequestShapeTests {
    @Test(arguments: [
        ("POST", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("PATCH", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("OPTIONS", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("PUT", "/inbox", "GET, HEAD, POST"),
        ("PATCH", "/inbox", "GET, HEAD, POST"),
        ("DELETE", "/inbox", "GET, HEAD, POST"),
    ])
    func unservedMethodIs405WithAllow(method: String, path: String, allow: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.send(method, path, body: Array("{}".utf8))
        #expect(response.status == 405)
        #expect(response.header("Allow") == allow)
        #expect(response.inboxBody == InboxSandbox.error("method \(method) not allowed on \(path); allowed: \(allow)"))
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
    }

    @Test(arguments: ["/", "/inboxes", "/inbox-x", "/Inbox", "/user/settings", "/inbox.json", ""])
    func pathsTheRouteDoesNotServeAre404(path: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.send("GET", path)
        #expect(response.status == 404)
        #expect(response.inboxBody == InboxSandbox.error("not found"))
    }

    @Test(arguments: [("GET", "/inbox"), ("POST", "/inbox"), ("GET", "/inbox/m"), ("PUT", "/inbox/m"), ("DELETE", "/inbox/m")])
    func missingOrInvalidUserKeyIs400AndTouchesNothing(method: String, path: String) throws {
        let inbox = try InboxSandbox()
        let body = Array("{}".utf8)
        for key in [nil, ""] as [String?] {
            let response = inbox.send(method, path, body: body, userKey: key)
            #expect(response.status == 400)
            #expect(response.inboxBody == InboxSandbox.error("X-User-Key header required"))
        }
        for key in ["../user-1", "a b", "user.1", String(repeating: "k", count: 129)] {
            let response = inbox.send(method, path, body: body, userKey: key)
            #expect(response.status == 400)
            #expect(response.inboxBody == InboxSandbox.error("invalid X-User-Key shape"))
        }
        #expect(InboxSandbox.entries(inbox.root) == [])
    }

    @Test func keysDoNotSeeEachOthersMessages() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.send("GET", "/inbox/m", userKey: "other").status == 404)
        #expect(inbox.send("GET", "/inbox", userKey: "other").inboxBody
            == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
        #expect(inbox.send("DELETE", "/inbox/m", userKey: "other").status == 404)
        #expect(inbox.get("m").status == 200)
        #expect(InboxSandbox.entries(inbox.root + "/inbox").contains(InboxSandbox.key))
    }

    @Test func aDeleteThatFindsNothingInAnUnusedInboxWritesNothing() throws {
        let inbox = try InboxSandbox()
        #expect(inbox.delete("m").status == 404)
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
        #expect(inbox.feed().inboxBody == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
    }
}
