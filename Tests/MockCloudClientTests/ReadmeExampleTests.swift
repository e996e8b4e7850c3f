import MockCloudTestSupport
import Testing

/// The README's "Sync from a device" code is Tests/ReadmeExample's files, which
/// `swift build` and the iOS build compile: the two must stay the same.
@Suite struct ReadmeExampleTests {
    @Test(arguments: ["SyncFromADevice.swift", "SyncWithAnEngine.swift"])
    func theReadmeShowsTheCompiledExampleWordForWord(_ file: String) throws {
        let readme = try repositoryFile("README.md")
        let example = try repositoryFile("Tests/ReadmeExample/" + file)
        #expect(readme.contains("```swift\n" + example + "```\n"),
                "README.md's Swift block under \"Sync from a device\" differs from Tests/ReadmeExample/\(file)")
    }
}
