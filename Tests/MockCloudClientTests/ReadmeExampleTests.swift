import MockCloudTestSupport
import Testing

/// The README's "Sync from a device" code is Tests/ReadmeExample, which
/// `swift build` and the iOS build compile: the two must stay the same.
@Suite struct ReadmeExampleTests {
    @Test func theReadmeShowsTheCompiledExampleWordForWord() throws {
        let readme = try repositoryFile("README.md")
        let example = try repositoryFile("Tests/ReadmeExample/SyncFromADevice.swift")
        #expect(readme.contains("```swift\n" + example + "```\n"),
                "README.md's Swift block under \"Sync from a device\" differs from Tests/ReadmeExample/SyncFromADevice.swift")
    }
}
