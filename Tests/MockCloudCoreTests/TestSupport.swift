import Foundation
import Glibc
import MockCloudCore
import Testing

// Helpers shared by the storage, CGI and route tests. They live in their own
// file because three feature files use them; each feature file holds tests only.

/// A fresh directory from `mkdtemp(3)`, removed with everything in it when the
/// test lets go of it.
final class TemporaryDirectory {
    /// Absolute path, without a trailing slash.
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/mockcloud-unit-XXXXXX").utf8CString)
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
    func file(_ relative: String) -> String { path + "/" + relative }

    /// The bytes of a file, or `nil` when it does not exist.
    func bytes(of relative: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(relative)).map { [UInt8]($0) }
    }

    /// The text of a file, or `nil` when it does not exist.
    func text(of relative: String) -> String? {
        bytes(of: relative).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes a file as another program would (e.g. the Python mock cloud), creating folders.
    func write(_ text: String, to relative: String) throws {
        try write(Array(text.utf8), to: relative)
    }

    func write(_ bytes: [UInt8], to relative: String) throws {
        let target = URL(fileURLWithPath: file(relative))
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: target)
    }

    /// The names in a folder, sorted; `[]` when it does not exist.
    func entries(_ relative: String = "") -> [String] {
        let folder = relative.isEmpty ? path : file(relative)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// The permission bits of a file or folder (`st_mode & 0o7777`).
    func mode(of relative: String) -> mode_t? {
        var info = stat()
        guard stat(relative.isEmpty ? path : file(relative), &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }
}

/// Runs `body` with the read end of a pipe as stdin. Another thread writes
/// `bytes` and closes the write end, so bodies larger than the pipe's buffer
/// work. Returns the body's result and whatever `body` left unread.
func withStdin<T>(_ bytes: [UInt8], _ body: (Int32) throws -> T) throws -> (result: T, unread: [UInt8]) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SystemError("pipe", errno: errno) }
    let (readEnd, writeEnd) = (fds[0], fds[1])
    defer { close(readEnd) }
    let writer = DispatchGroup()
    DispatchQueue.global().async(group: writer) {
        try? Sys.writeAll(writeEnd, bytes, path: "test pipe")
        close(writeEnd)
    }
    let result = try body(readEnd)
    // Whatever is left is read here, so the writer always finishes.
    let unread = try Sys.readAll(readEnd, path: "test pipe")
    writer.wait()
    return (result, unread)
}

extension CGIResponse {
    /// The body as text, for exact comparisons.
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The serialized CGI answer as text.
    var wire: String { String(decoding: serialized, as: UTF8.self) }
}

/// Parses JSON text in a test; a parse failure is the test's failure.
func json(_ text: String, allowNonFinite: Bool = false) throws -> JSONValue {
    try JSONParser.parse(Array(text.utf8), allowNonFinite: allowNonFinite)
}

/// `JSONPrinter.compact` as text.
func compactText(_ value: JSONValue) -> String {
    String(decoding: JSONPrinter.compact(value), as: UTF8.self)
}

/// `JSONPrinter.pretty` as text.
func prettyText(_ value: JSONValue) -> String {
    String(decoding: JSONPrinter.pretty(value), as: UTF8.self)
}

/// `flock(2)`: Glibc's `struct flock` hides the function from Swift, so it is
/// bound by its C symbol, as the library does.
@_silgen_name("flock")
func testFlock(_ fd: Int32, _ operation: Int32) -> Int32

/// Runs a route as the CGI edge does: an `HTTPResponseError` becomes its
/// answer; any other error is a test failure.
func answer(_ respond: () throws -> CGIResponse) -> CGIResponse {
    do {
        return try respond()
    } catch let error as any HTTPResponseError {
        return .error(error)
    } catch {
        Issue.record("not an HTTP error: \(error)")
        return CGIResponse(status: 0)
    }
}
