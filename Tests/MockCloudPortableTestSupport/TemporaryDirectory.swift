import Foundation

/// A fresh directory (owner-only) under the system's temporary folder,
/// removed with everything in it when the test lets go of it: the one
/// temporary-directory helper of every Swift test target. Foundation only,
/// so that the client's tests that use it run on a Mac as on Linux.
package final class TemporaryDirectory {
    /// Absolute path, without a trailing slash.
    package let path: String

    /// - Parameter prefix: the start of the folder's name, for whoever finds one left behind.
    package init(prefix: String = "mockcloud-test") throws {
        let base = NSTemporaryDirectory().hasSuffix("/") ? String(NSTemporaryDirectory().dropLast()) : NSTemporaryDirectory()
        // A new name each try; createDirectory refuses one that exists, as mkdtemp(3) does.
        var attempt = 0
        while true {
            let candidate = base + "/\(prefix)-" + UUID().uuidString.prefix(8)
            do {
                try FileManager.default.createDirectory(
                    atPath: candidate, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                path = candidate
                return
            } catch where attempt < 8 && FileManager.default.fileExists(atPath: candidate) {
                attempt += 1
            }
        }
    }

    deinit {
        // Restore write permission first, in case a test took it away.
        let manager = FileManager.default
        if let walker = manager.enumerator(atPath: path) {
            for case let entry as String in walker {
                try? manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path + "/" + entry)
            }
        }
        try? manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        try? manager.removeItem(atPath: path)
    }

    /// `path + "/" + relative`.
    package func file(_ relative: String) -> String { path + "/" + relative }

    /// The bytes of a file, or `nil` when it does not exist.
    package func bytes(of relative: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(relative)).map { [UInt8]($0) }
    }

    /// The text of a file, or `nil` when it does not exist.
    package func text(of relative: String) -> String? {
        bytes(of: relative).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes a file as another program would (e.g. the Python mock cloud), creating folders.
    package func write(_ text: String, to relative: String) throws {
        try write(Array(text.utf8), to: relative)
    }

    package func write(_ bytes: [UInt8], to relative: String) throws {
        let target = URL(fileURLWithPath: file(relative))
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: target)
    }

    /// The names in a folder, sorted; `[]` when it does not exist.
    package func entries(_ relative: String = "") -> [String] {
        let folder = relative.isEmpty ? path : file(relative)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// The permission bits of a file or folder (`st_mode & 0o7777`).
    package func mode(of relative: String) -> Int? {
        let attributes = try? FileManager.default.attributesOfItem(atPath: relative.isEmpty ? path : file(relative))
        return (attributes?[.posixPermissions] as? NSNumber)?.intValue
    }
}
