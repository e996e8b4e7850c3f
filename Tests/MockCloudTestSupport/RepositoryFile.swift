import MockCloudSystem
import Testing

/// A file of this repository, as text (the tests that check documents and
/// configurations against the code's one list of a fact).
package func repositoryFile(_ relative: String) throws -> String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    let bytes = try #require(try Sys.readFile(path + "/" + relative), "\(relative) is missing")
    return String(decoding: bytes, as: UTF8.self)
}
