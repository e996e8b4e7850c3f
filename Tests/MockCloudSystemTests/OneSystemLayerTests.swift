import MockCloudSystem
import Testing

/// Every system call the service makes goes through `Sys` (MockCloudSystem):
/// no other target of the server imports the C library.
@Suite struct OneSystemLayerTests {
    @Test func noTargetButMockCloudSystemImportsGlibc() throws {
        var sources = #filePath
        for _ in 0..<3 { sources = String(sources[..<sources.lastIndex(of: "/")!]) }
        sources += "/Sources"
        var offenders: [String] = []
        for target in try Sys.names(in: sources) where target != "MockCloudSystem" {
            for file in try Sys.names(in: sources + "/" + target) where file.hasSuffix(".swift") {
                let path = sources + "/" + target + "/" + file
                let text = String(decoding: try Sys.readFile(path) ?? [], as: UTF8.self)
                if text.contains("import Glibc") || text.contains("Glibc.") { offenders.append(target + "/" + file) }
            }
        }
        #expect(offenders == [], "these call the C library directly; add what they need to Sys")
        // The test looked where the sources are.
        #expect(try Sys.names(in: sources).contains("MockCloudSystem"))
    }
}
