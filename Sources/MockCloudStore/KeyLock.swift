import Glibc
import MockCloudSystem

/// Per-key locks (`flock`) on files under `<data>/.locks/`: writers on one key
/// are serialised, readers of a key's feed share the lock so that they never
/// see a write half done, and different keys never wait for each other.
package enum KeyLock {
    /// Runs `body` while holding the lock of `route` and `key`
    /// (`<root>/.locks/<route>.<key>.lock`).
    package static func withLock<T>(
        root: String, route: Route, key: UserKey, shared: Bool = false, _ body: () throws -> T
    ) throws -> T {
        let directory = Sys.path(root, "/.locks")
        let path = Sys.path(directory, "/", route.name, ".", key.rawValue, ".lock")
        let fd: Int32
        do {
            do {
                fd = try Sys.open(path, O_RDWR | O_CREAT, mode: 0o600)
            } catch let error as SystemError where error.errno == ENOENT {
                try Sys.makeDirectories(directory)
                fd = try Sys.open(path, O_RDWR | O_CREAT, mode: 0o600)
            }
        } catch let error as SystemError where shared && error.isNotWritable {
            // A read-only data directory has no writers to wait for.
            guard let readOnly = try? Sys.open(path, O_RDONLY) else { return try body() }
            fd = readOnly
        } catch let error as SystemError {
            throw StorageError(error, shared ? .reading : .writing)
        }
        return try Sys.closing(fd) { fd in
            do {
                try Sys.lock(fd, shared: shared, path: path)
            } catch let error as SystemError {
                throw StorageError(error, shared ? .reading : .writing)
            }
            return try body()
        }
    }
}
