import Foundation

/// A file this repository should have is missing.
package struct MissingRepositoryFile: Error, CustomStringConvertible {
    package let relative: String
    package var description: String { "\(relative) is missing" }
}

/// A file of this repository, as text (the tests that check documents and
/// configurations against the code's one list of a fact).
package func repositoryFile(_ relative: String) throws -> String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    guard let data = FileManager.default.contents(atPath: path + "/" + relative) else {
        throw MissingRepositoryFile(relative: relative)
    }
    return String(decoding: data, as: UTF8.self)
}
