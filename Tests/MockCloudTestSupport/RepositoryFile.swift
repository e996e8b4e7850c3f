import MockCloudSystem

/// A file of this repository, as text (the tests that check documents and
/// configurations against the code's one list of a fact).
package func repositoryFile(_ relative: String) throws -> String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    guard let bytes = try Sys.readFile(path + "/" + relative) else { throw MissingRepositoryFile(path: relative) }
    return String(decoding: bytes, as: UTF8.self)
}

/// `repositoryFile` found no such file.
package struct MissingRepositoryFile: Error, CustomStringConvertible {
    package let path: String
    package var description: String { "\(path) is missing" }
}
