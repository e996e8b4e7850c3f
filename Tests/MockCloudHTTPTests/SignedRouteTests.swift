import Foundation
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudTestSupport
import Testing

/// Both routes with signing on: a copied or tampered file is not served.
@Suite struct SignedRouteTests {
    @Test func settingsCopiedFromAnotherUserFailTheirCheck() throws {
        let dir = try TemporaryDirectory()
        let integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        let route = SettingsRoute(dataRoot: dir.path, integrity: integrity, clock: { 0 })
        for key in ["u1", "u2"] {
            let put = try route.respond(to: CGIRequest(method: "PUT", path: "/user/settings", headers: ["X-User-Key": key], body: SigningFixture.bytes("{\"who\": \"\(key)\"}")))
            #expect(put.status == 200)
        }
        for suffix in [".json", ".json.mac"] {
            let from = dir.path + "/user_settings/u2" + suffix, to = dir.path + "/user_settings/u1" + suffix
            try FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
        #expect {
            try route.respond(to: CGIRequest(method: "GET", path: "/user/settings", headers: ["X-User-Key": "u1"]))
        } throws: { error in
            (error as? IntegrityError)?.message == "stored data failed its integrity check"
        }
    }

    @Test func inboxMessagesAreSignedAndATamperedOneStopsTheFeed() throws {
        let dir = try TemporaryDirectory()
        let route = InboxRoute(dataRoot: dir.path, integrity: try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n"), clock: { 0 })
        let put = try route.respond(to: CGIRequest(method: "PUT", path: "/inbox/m1", headers: ["X-User-Key": "u1"], body: SigningFixture.bytes("{\"kg\": 70}")))
        #expect(put.status == 201)
        let file = dir.path + "/inbox/u1/messages/m1.json"
        #expect(FileManager.default.fileExists(atPath: file + ".mac"))
        let feed = try route.respond(to: CGIRequest(method: "GET", path: "/inbox", headers: ["X-User-Key": "u1"]))
        #expect(feed.status == 200)
        let text = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "70", with: "99")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: IntegrityError.self) {
            try route.respond(to: CGIRequest(method: "GET", path: "/inbox", headers: ["X-User-Key": "u1"]))
        }
        #expect(throws: IntegrityError.self) {
            try route.respond(to: CGIRequest(method: "GET", path: "/inbox/m1", headers: ["X-User-Key": "u1"]))
        }
    }
}
