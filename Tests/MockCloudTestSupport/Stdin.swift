import Dispatch
import Glibc
import MockCloudSystem

/// Runs `body` with the read end of a pipe as stdin. Another thread writes
/// `bytes` and closes the write end, so bodies larger than the pipe's buffer
/// work. Returns the body's result and whatever `body` left unread.
package func withStdin<T>(_ bytes: [UInt8], _ body: (FileDescriptor) throws -> T) throws -> (result: T, unread: [UInt8]) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SystemError("pipe", errno: errno) }
    let (readEnd, writeEnd) = (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    defer { Sys.close(readEnd) }
    let writer = DispatchGroup()
    DispatchQueue.global().async(group: writer) {
        try? Sys.writeAll(writeEnd, bytes, path: "test pipe")
        Sys.close(writeEnd)
    }
    let result = try body(readEnd)
    // Whatever is left is read here, so the writer always finishes.
    let unread = try Sys.readAll(readEnd, path: "test pipe")
    writer.wait()
    return (result, unread)
}

/// `flock(2)`: Glibc's `struct flock` hides the function from Swift, so it is
/// bound by its C symbol, as the library does.
@_silgen_name("flock")
package func testFlock(_ fd: Int32, _ operation: Int32) -> Int32
