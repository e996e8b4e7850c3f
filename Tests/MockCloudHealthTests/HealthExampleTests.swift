import Foundation
import MockCloudTestSupport
import Testing

/// The HealthKit guide's integration (docs/HEALTHKIT.md, "Adding it to an
/// app") is Tests/HealthExample's file, which `swift build` and the iOS
/// build compile: it must stay the same as its copy in the guide, and
/// within the 40 lines of app code the guide promises.
@Suite struct HealthExampleTests {
    @Test func theHealthKitGuideShowsTheCompiledExampleWordForWord() throws {
        let guide = try repositoryFile("docs/HEALTHKIT.md")
        let example = try repositoryFile("Tests/HealthExample/HealthSync.swift")
        #expect(guide.contains("```swift\n" + example + "```\n"), "docs/HEALTHKIT.md's Swift block differs from Tests/HealthExample/HealthSync.swift")
        let code = example.split(separator: "\n").filter {
            let line = $0.trimmingCharacters(in: .whitespaces)
            return !line.isEmpty && !line.hasPrefix("//") && !line.hasPrefix("import ") && !line.hasPrefix("#")
        }
        #expect(code.count <= 40, "the integration is \(code.count) lines of app code")
    }
}
