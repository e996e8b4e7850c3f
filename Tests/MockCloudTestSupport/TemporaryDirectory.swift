import Foundation
import Glibc
import MockCloudSystem

/// A fresh directory from `mkdtemp(3)` under the system's temporary folder,
/// removed with everything in it when the test lets go of it: the one
/// temporary-directory helper of every Swift test target.
package final class TemporaryDirectory {
    /// Absolute path, without a trailing slash.
    package let path: String

    /// - Parameter prefix: the start of the folder's name, for whoever finds one left behind.
    package init(prefix: String = "mockcloud-test") throws {
        var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError("mkdtemp", errno: errno)
        }
        path = String(cString: made)
    }

    deinit {
        // Restore write permission first, in case a test took it away.
        if let walker = FileManager.default.enumerator(atPath: path) {
            for case let entry as String in walker { chmod(path + "/" + entry, 0o700) }
        }
        chmod(path, 0o700)
        try? FileManager.default.removeItem(atPath: path)
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
    package func mode(of relative: String) -> mode_t? {
        var info = stat()
        guard stat(relative.isEmpty ? path : file(relative), &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }
}
