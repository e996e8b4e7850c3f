/// The client's atomic, durable small files (`Platform`'s read and replace)
/// for the libraries above it: MockCloudHealth keeps its import anchors in
/// the engine's state directory with them, written the one way the client
/// writes its own.
package enum DurableFile {
    /// The file's bytes; nil when there is no file at `path`.
    package static func read(_ path: String) throws -> [UInt8]? {
        try Platform.read(path)
    }

    /// Replaces `path` atomically and durably: a crash leaves the old file or the new one.
    package static func replace(_ path: String, with bytes: [UInt8]) throws {
        try Platform.replace(path, with: bytes)
    }
}
