import Foundation
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudTestSupport
import MockCloudWire
import Testing

/// docs/API.md §2: a query parameter the route does not take, or one given
/// twice, is a 400 that names it and lists the ones the route takes, on
/// every route and method, before the user key is looked at.
@Suite struct QueryParameterTests {
    /// Every route and method a program serves, with what it takes.
    static let routes: [(method: String, path: String, takes: String)] = [
        ("GET", "/inbox", "takes anchor, limit, exclude-source, wait"),
        ("HEAD", "/inbox", "takes anchor, limit, exclude-source, wait"),
        ("POST", "/inbox", "takes no query parameters"),
        ("GET", "/inbox/m1", "takes no query parameters"),
        ("HEAD", "/inbox/m1", "takes no query parameters"),
        ("PUT", "/inbox/m1", "takes no query parameters"),
        ("DELETE", "/inbox/m1", "takes no query parameters"),
        ("POST", "/inbox:bulk", "takes no query parameters"),
        ("GET", "/user/settings", "takes wait"),
        ("HEAD", "/user/settings", "takes wait"),
        ("PUT", "/user/settings", "takes no query parameters"),
        ("PATCH", "/user/settings", "takes no query parameters"),
        ("DELETE", "/user/settings", "takes no query parameters"),
    ]

    /// The route's answer to `method path?query`, with no user key: a 400
    /// for the query comes before the key's.
    static func send(_ method: String, _ path: String, _ query: String, headers: [String: String] = [:]) throws -> CGIResponse {
        let data = try TemporaryDirectory()
        let request = CGIRequest(method: method, path: path, query: query, headers: headers, body: [])
        if path == "/user/settings" { return answer { try SettingsRoute(dataRoot: data.path).respond(to: request) } }
        return answer { try InboxRoute(dataRoot: data.path).respond(to: request) }
    }

    static func error(_ response: CGIResponse) -> String? {
        (try? JSONParser.parse(response.body))?.objectValue?["error"]?.stringValue
    }

    @Test(arguments: routes)
    func anUnknownParameterIsRefusedNamingItAndWhatTheRouteTakes(route: (method: String, path: String, takes: String)) throws {
        let response = try Self.send(route.method, route.path, "since=5")
        #expect(response.status == 400)
        #expect(Self.error(response) == "unknown query parameter \"since\"; \(route.method) \(route.path) \(route.takes)")
    }

    @Test(arguments: ["Limit=5", "anchor=&since=5", "flag", "=v", "limit=5&wait=1&x"])
    func namesAreExactAndEveryOneIsChecked(query: String) throws {
        let response = try Self.send("GET", "/inbox", query)
        #expect(response.status == 400)
        #expect(Self.error(response)?.hasPrefix("unknown query parameter ") == true)
        #expect(Self.error(response)?.hasSuffix("; GET /inbox takes anchor, limit, exclude-source, wait") == true)
    }

    @Test(arguments: ["limit=5&limit=6", "anchor=&anchor=", "wait=5&limit=1&wait=5"])
    func aRepeatedParameterIsRefused(query: String) throws {
        let response = try Self.send("GET", "/inbox", query)
        let name = query.split(separator: "&").first!.split(separator: "=").first!
        #expect(response.status == 400)
        #expect(Self.error(response) == "query parameter \"\(name)\" given more than once; "
            + "GET /inbox takes anchor, limit, exclude-source, wait, each once")
    }

    @Test func aRepeatedWaitOnSettingsIsRefused() throws {
        let response = try Self.send("GET", "/user/settings", "wait=1&wait=2")
        #expect(Self.error(response) == "query parameter \"wait\" given more than once; GET /user/settings takes wait, each once")
    }

    @Test func aMalformedQueryIsRefusedOnEveryRoute() throws {
        for route in Self.routes {
            let response = try Self.send(route.method, route.path, "a=%zz")
            #expect(response.status == 400, "\(route.method) \(route.path)")
            #expect(Self.error(response) == "malformed query string")
        }
    }

    @Test func theParametersARouteTakesPassToTheUserKeyCheck() throws {
        let response = try Self.send("GET", "/inbox", "anchor=&limit=5&exclude-source=phone-1")
        #expect(Self.error(response) == "X-User-Key header required")
        #expect(Self.error(try Self.send("PUT", "/inbox/m1", "")) == "X-User-Key header required")
    }

    @Test(arguments: ["0", "61", "", "-1", "1.5", "+5", "abc", "100", " 5", "5s"])
    func aWaitOutsideOneToSixtyWholeSecondsIsRefused(wait: String) throws {
        for path in ["/inbox", "/user/settings"] {
            let response = try Self.send("GET", path, "wait=" + wait.replacingOccurrences(of: " ", with: "%20")
                .replacingOccurrences(of: "+", with: "%2B"), headers: ["X-User-Key": "u1", "If-None-Match": "*"])
            #expect(response.status == 400)
            #expect(Self.error(response)
                == "invalid wait \(String(reflecting: wait)): must be a whole number of seconds from 1 to 60")
        }
    }
}
