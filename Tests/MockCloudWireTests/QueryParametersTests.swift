import MockCloudTestSupport
import MockCloudWire
import Testing

/// `QueryParameters` is the one list of what each route takes: the
/// programs refuse anything else, and docs/openapi.yaml must describe
/// exactly these query parameters for each operation.
@Suite struct QueryParametersTests {
    /// Each operation of the document ("get /inbox") with the names of its
    /// query parameters, and each query parameter component's name.
    static func operations(in document: String) -> [String: Set<String>] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // components/parameters: Name -> (name, in)
        var components: [String: (name: String, location: String)] = [:]
        var inComponents = false
        var current = ""
        for line in lines {
            if line == "  parameters:" { inComponents = true; continue }
            if inComponents && line.hasPrefix("  ") && !line.hasPrefix("   ") { inComponents = false }
            guard inComponents else { continue }
            if line.hasPrefix("    ") && !line.hasPrefix("     ") && line.hasSuffix(":") {
                current = String(line.dropFirst(4).dropLast())
                components[current] = ("", "")
            } else if line.hasPrefix("      name: ") {
                components[current]?.name = String(line.dropFirst(12))
            } else if line.hasPrefix("      in: ") {
                components[current]?.location = String(line.dropFirst(10))
            }
        }
        var operations: [String: Set<String>] = [:]
        var path = ""
        var method = ""
        var inPaths = false
        for line in lines {
            if line == "paths:" { inPaths = true; continue }
            if inPaths && !line.isEmpty && !line.hasPrefix(" ") { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /") {
                path = String(line.dropFirst(2).dropLast())
                method = ""
            } else if line.hasPrefix("    ") && !line.hasPrefix("     ") {
                let word = String(line.dropFirst(4).dropLast())
                method = ["get", "head", "put", "patch", "post", "delete"].contains(word) ? word : ""
                if !method.isEmpty { operations[method + " " + path, default: []] = [] }
            } else if !method.isEmpty, line.hasPrefix("        - $ref: \"#/components/parameters/") {
                let name = String(line.split(separator: "/").last!.dropLast())
                if let component = components[name], component.location == "query" {
                    operations[method + " " + path]?.insert(component.name)
                }
            }
        }
        return operations
    }

    @Test func theDocumentDescribesExactlyTheParametersEachRouteTakes() throws {
        let operations = Self.operations(in: try repositoryFile("docs/openapi.yaml"))
        #expect(operations.count >= 13)
        for (operation, names) in operations {
            let expected: [String]
            switch operation {
            case "get /inbox", "head /inbox": expected = QueryParameters.feed
            case "get /user/settings", "head /user/settings": expected = QueryParameters.settings
            default: expected = QueryParameters.none
            }
            #expect(names == Set(expected), "\(operation)")
        }
    }

    @Test func theDocumentsWaitIsTheWiresRange() throws {
        let api = try repositoryFile("docs/openapi.yaml")
        let wait = try #require(api.components(separatedBy: "      name: wait\n").dropFirst().first?.prefix(600))
        #expect(wait.contains("minimum: \(WireLimits.waitSeconds.lowerBound)\n"))
        #expect(wait.contains("maximum: \(WireLimits.waitSeconds.upperBound)\n"))
    }
}
