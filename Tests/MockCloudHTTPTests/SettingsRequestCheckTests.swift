import Foundation
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

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
