import MockCloudTestSupport
import MockCloudWire
import Testing

/// `WireLimits` is the one home of the request limits: nginx's body limits
/// and 413 texts and the OpenAPI document are checked against it here, as
/// the routes and the client read it directly.
@Suite struct WireLimitsTests {
    /// `1m`, `256k`, `8m` as nginx writes sizes.
    static func nginxSize(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20)m" : "\(bytes >> 10)k"
    }

    /// `1,048,576`: digits in groups of three, as the documents write them.
    static func grouped(_ value: Int) -> String {
        var text = String(value)
        var cut = text.count - 3
        while cut > 0 {
            text.insert(",", at: text.index(text.startIndex, offsetBy: cut))
            cut -= 3
        }
        return text
    }

    /// The `client_max_body_size` of the location whose line starts with `location`.
    static func bodyLimit(in config: String, location: String) throws -> String {
        let block = try #require(config.components(separatedBy: location).dropFirst().first, "no \(location) in nginx")
        let line = try #require(block.split(separator: "\n").first { $0.contains("client_max_body_size") })
        return String(line.split(separator: " ", omittingEmptySubsequences: true).last!.dropLast())
    }

    @Test func nginxRefusesExactlyTheBodiesTheProgramsRefuse() throws {
        let config = try repositoryFile("nginx/mockcloud-locations.conf")
        #expect(try Self.bodyLimit(in: config, location: "location ~ ^/user/settings\\z")
            == Self.nginxSize(WireLimits.settingsBodyBytes))
        #expect(try Self.bodyLimit(in: config, location: "location ~ ^/inbox:bulk\\z")
            == Self.nginxSize(WireLimits.bulkBodyBytes))
        #expect(try Self.bodyLimit(in: config, location: "location ~ ^/inbox(/|$)")
            == Self.nginxSize(WireLimits.messageBodyBytes))
    }

    @Test func nginxs413TextsAndTheOpenAPIDocumentNameTheLimitsInBytes() throws {
        let config = try repositoryFile("nginx/mockcloud-locations.conf")
        let api = try repositoryFile("docs/openapi.yaml")
        for bytes in [WireLimits.settingsBodyBytes, WireLimits.messageBodyBytes] {
            #expect(config.contains("(\(bytes) bytes)"), "nginx's 413 text lacks \(bytes) bytes")
            #expect(api.contains("(\(bytes) bytes)"), "openapi.yaml's 413 example lacks \(bytes) bytes")
        }
        #expect(config.contains("accepts up to 8 MiB (\(WireLimits.bulkBodyBytes) bytes) per request"))
        for bytes in [WireLimits.settingsBodyBytes, WireLimits.messageBodyBytes, WireLimits.bulkBodyBytes] {
            #expect(api.contains(Self.grouped(bytes) + " bytes"), "openapi.yaml does not state \(Self.grouped(bytes)) bytes")
        }
    }

    @Test func theOpenAPIDocumentsCountsAreTheWiresCounts() throws {
        let api = try repositoryFile("docs/openapi.yaml")
        let bulk = try #require(api.components(separatedBy: "    BulkRequest:").dropFirst().first)
        #expect(bulk.contains("maxItems: \(WireLimits.bulkItems)\n"))
        let limit = try #require(api.components(separatedBy: "      name: limit\n").dropFirst().first?.prefix(400))
        #expect(limit.contains("minimum: \(WireLimits.feedPageSizes.lowerBound)\n"))
        #expect(limit.contains("maximum: \(WireLimits.feedPageSizes.upperBound)\n"))
        #expect(limit.contains("default: \(WireLimits.feedPageDefault)\n"))
    }
}
