import Foundation
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// docs/ARCHITECTURE.md says what Package.swift says: every target is named
/// in both, the diagram shows every target of Sources/, the table lists each
/// target's dependencies exactly as Package.swift declares them, and the
/// document states no line or file counts (nothing here would keep them true).
@Suite struct ArchitectureTests {
    /// A target of Package.swift: its name, kind, dependencies and whether
    /// its sources are in Sources/ (no `path:` elsewhere).
    struct Target: Equatable {
        var name: String
        var kind: String
        var dependencies: [String]
        var inSources: Bool
    }

    /// The targets of Package.swift, read from its text: each
    /// `.target(…)`, `.executableTarget(…)`, `.testTarget(…)` and
    /// `.systemLibrary(…)` in `targets: [ … ]`, its dependencies by name
    /// (a conditional one, `.target(name: "X", condition: …)`, too).
    static func packageTargets() throws -> [Target] {
        let text = try repositoryFile("Package.swift")
        let list = try #require(text.components(separatedBy: "    targets: [").dropFirst().first)
        var targets: [Target] = []
        var rest = Substring(list)
        while let start = rest.range(of: #"\n        \.(target|executableTarget|testTarget|systemLibrary)\("#, options: .regularExpression) {
            let kind = String(rest[start].dropFirst(10).dropLast())
            // The call's text, up to its closing parenthesis.
            var depth = 0, end = start.upperBound
            var index = rest.index(before: start.upperBound)
            while index < rest.endIndex {
                if rest[index] == "(" || rest[index] == "[" { depth += 1 }
                if rest[index] == ")" || rest[index] == "]" { depth -= 1 }
                if depth == 0 { end = index; break }
                index = rest.index(after: index)
            }
            let call = String(rest[start.upperBound..<end])
            let name = try #require(Self.quoted(after: "name: ", in: call))
            var dependencies: [String] = []
            if let list = call.components(separatedBy: "dependencies: [").dropFirst().first {
                // Each element at the list's own level: `"X"`, or `.target(name: "X", condition: …)`.
                var level = 0, element = ""
                for character in list {
                    if character == "(" || character == "[" { level += 1 }
                    if character == ")" || character == "]" { level -= 1 }
                    if level < 0 || (level == 0 && character == ",") {
                        if let name = Self.quoted(after: "", in: element) { dependencies.append(name) }
                        element = ""
                        if level < 0 { break }
                    } else {
                        element.append(character)
                    }
                }
            }
            targets.append(Target(name: name, kind: kind, dependencies: dependencies, inSources: !call.contains("path: ")))
            rest = rest[end...]
        }
        return targets
    }

    /// The first `"…"` after `marker` in `text`.
    static func quoted(after marker: String, in text: String) -> String? {
        guard let from = marker.isEmpty ? text.startIndex : text.range(of: marker)?.upperBound,
            let open = text[from...].firstIndex(of: "\""),
            let close = text[text.index(after: open)...].firstIndex(of: "\"")
        else { return nil }
        return String(text[text.index(after: open)..<close])
    }

    /// The document, its diagram (the first code block) and its table's
    /// rows: target → the names in the "depends on" column.
    static func document() throws -> (text: String, diagram: String, table: [String: [String]]) {
        let text = try repositoryFile("docs/ARCHITECTURE.md")
        let diagram = try #require(text.components(separatedBy: "```").dropFirst().first)
        var table: [String: [String]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") && !line.hasPrefix("| target") && !line.hasPrefix("| ---") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            // "COpenSSL (Linux)": a condition, not part of the name.
            table[cells[1]] = cells[2].split(separator: ",").map { String($0.split(separator: " ").first ?? "") }
                .filter { !$0.isEmpty }
        }
        return (text, diagram, table)
    }

    @Test func everyTargetIsNamedInTheDocument() throws {
        let targets = try Self.packageTargets()
        #expect(targets.count > 20, "Package.swift's targets were not read")
        let (text, _, _) = try Self.document()
        for target in targets {
            #expect(text.contains(target.name), "docs/ARCHITECTURE.md does not name \(target.name)")
        }
    }

    @Test func theDiagramShowsEveryTargetOfSources() throws {
        let (_, diagram, _) = try Self.document()
        for target in try Self.packageTargets() where target.inSources && target.kind != "testTarget" {
            #expect(diagram.contains(target.name), "the diagram leaves out \(target.name)")
        }
    }

    @Test func theTableListsEachTargetsDependenciesAsPackageSwiftDeclaresThem() throws {
        let (_, _, table) = try Self.document()
        let targets = try Self.packageTargets().filter { $0.kind != "testTarget" && !$0.name.hasSuffix("TestSupport") }
        for target in targets {
            let row = try #require(table[target.name], "the table has no row for \(target.name)")
            #expect(Set(row) == Set(target.dependencies), "\(target.name): the table says \(row), Package.swift \(target.dependencies)")
        }
        #expect(Set(table.keys) == Set(targets.map(\.name)), "the table names targets Package.swift does not have")
    }

    @Test func theDocumentStatesNoCountsOfLinesOrFiles() throws {
        let (text, _, _) = try Self.document()
        #expect(text.range(of: #"[0-9][0-9,]* (lines|files)\b"#, options: .regularExpression) == nil)
    }
}
