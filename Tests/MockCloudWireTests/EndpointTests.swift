import MockCloudTestSupport
import MockCloudWire
import Testing

/// `Endpoint` is the one list of the paths and the methods each serves:
/// the programs answer 405 from it, and nginx's method lines (which keep
/// other methods from the programs) and its own 405's `Allow` are checked
/// against it here.
@Suite struct EndpointTests {
    static let config = "nginx/mockcloud-locations.conf"

    /// The methods of the `if ($request_method ...) { return 405; }` line
    /// in the location whose line starts with `location`.
    static func nginxMethods(in config: String, location: String) throws -> Set<String> {
        let block = try #require(config.components(separatedBy: location + " {").dropFirst().first, "no \(location) in nginx")
        let line = try #require(block.split(separator: "\n").first { $0.contains("$request_method") && $0.contains("return 405") })
        if line.contains("!~ ^(") {
            let list = try #require(line.components(separatedBy: "!~ ^(").dropFirst().first?.components(separatedBy: ")$").first)
            return Set(list.split(separator: "|").map(String.init))
        }
        let single = try #require(line.components(separatedBy: "!= ").dropFirst().first?.prefix { $0 != ")" })
        return [String(single)]
    }

    /// The `Allow` of nginx's own 405 for requests whose URI matches `pattern`.
    static func nginxAllow(in config: String, pattern: String) throws -> String {
        let line = try #require(config.split(separator: "\n").first { $0.contains("$request_uri ~ \"\(pattern)\"") },
                                "no 405 Allow for \(pattern)")
        return try #require(line.components(separatedBy: "set $mockcloud_allow \"").dropFirst().first?.prefix { $0 != "\"" })
            .description
    }

    static func names(_ endpoint: Endpoint) -> [String] { endpoint.methods.map(\.description) }

    @Test func nginxPassesEachLocationExactlyTheMethodsItsRoutesServe() throws {
        let config = try repositoryFile(Self.config)
        #expect(try Self.nginxMethods(in: config, location: "location ~ ^/user/settings\\z") == Set(Self.names(.settings)))
        #expect(try Self.nginxMethods(in: config, location: "location ~ ^/inbox:bulk\\z") == Set(Self.names(.bulk)))
        // One location serves the collection and its messages; the program
        // refuses what one of them does not serve (POST /inbox/<id>).
        #expect(try Self.nginxMethods(in: config, location: "location ~ ^/inbox(/|$)")
            == Set(Self.names(.inbox) + Self.names(.message)))
    }

    @Test(arguments: Endpoint.allCases)
    func nginxs405AllowsWhatTheProgramsAllow(_ endpoint: Endpoint) throws {
        let config = try repositoryFile(Self.config)
        // `/inbox/` names a prefix; the others a whole path, with or without a query.
        let pattern = endpoint == .message ? "^" + endpoint.path : "^" + endpoint.path + "(\\?|$)"
        #expect(try Self.nginxAllow(in: config, pattern: pattern) == Self.names(endpoint).joined(separator: ", "))
    }

    @Test func everyPathNginxRoutesIsAnEndpoint() throws {
        let config = try repositoryFile(Self.config)
        let routed = config.split(separator: "\n").filter { $0.contains("set $mockcloud_allow \"") && $0.contains("$request_uri") }
        #expect(routed.count == Endpoint.allCases.count)
    }
}
