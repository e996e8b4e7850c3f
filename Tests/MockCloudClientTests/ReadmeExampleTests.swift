import MockCloudTestSupport
import Testing

/// The sync guide's example (docs/SYNC.md, "An app's sync at launch") is
/// Tests/ReadmeExample, which `swift build` and the iOS build compile: the
/// two must stay the same.
@Suite struct ReadmeExampleTests {
    @Test func theSyncGuideShowsTheCompiledExampleWordForWord() throws {
        let guide = try repositoryFile("docs/SYNC.md")
        let example = try repositoryFile("Tests/ReadmeExample/SyncFromADevice.swift")
        #expect(guide.contains("```swift\n" + example + "```\n"),
                "docs/SYNC.md's Swift block under \"An app's sync at launch\" differs from Tests/ReadmeExample/SyncFromADevice.swift")
    }
}
