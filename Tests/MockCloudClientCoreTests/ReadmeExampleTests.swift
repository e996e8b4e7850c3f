import MockCloudPortableTestSupport
import Testing

/// The sync guide's examples (docs/SYNC.md: "An app's sync at launch" and
/// the engine's) are Tests/ReadmeExample's files, which `swift build` and
/// the iOS build compile: each must stay the same as its copy in the guide.
@Suite struct ReadmeExampleTests {
    @Test(arguments: ["SyncFromADevice.swift", "SyncWithAnEngine.swift"])
    func theSyncGuideShowsTheCompiledExampleWordForWord(_ file: String) throws {
        let guide = try repositoryFile("docs/SYNC.md")
        let example = try repositoryFile("Tests/ReadmeExample/" + file)
        #expect(guide.contains("```swift\n" + example + "```\n"),
                "docs/SYNC.md's Swift block differs from Tests/ReadmeExample/\(file)")
    }
}
