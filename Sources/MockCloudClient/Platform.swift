import Foundation
import MockCloudJSON
import MockCloudWire
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(COpenSSL)
import COpenSSL
#endif

/// What the client needs of the platform, in one place: files, locks, SHA-256.
/// Foundation for files on every platform (its POSIX calls come from Darwin
/// or Glibc through Foundation); SHA-256 from CryptoKit on Apple platforms,
/// libcrypto's one-shot call elsewhere.
enum Platform {
    /// The file's bytes; nil when there is no file at `path`.
    static func read(_ path: String) throws -> [UInt8]? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ClientError.local("cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// Replaces `path` atomically and durably: a temporary file beside it,
    /// written and synced, renamed over it, the folder synced. A crash
    /// leaves the old file or the new one (and perhaps the temporary file,
    /// `.<name>.<UUID>`, which `removeLeftovers` clears).
    static func replace(_ path: String, with bytes: [UInt8]) throws {
        try replace(path) { write in try write(bytes) }
    }

    /// The same, the new file's bytes written by `body` a part at a time
    /// (with the `write` it is given), so that they need not all be in memory.
    static func replace(_ path: String, writing body: (_ write: ([UInt8]) throws -> Void) throws -> Void) throws {
        let folder = folder(of: path)
        let temporary = folder + "/.\((path as NSString).lastPathComponent).\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: temporary, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: temporary)
        else { throw ClientError.local("cannot create \(temporary)") }
        do {
            defer { try? handle.close() }
            try body { bytes in
                do {
                    try handle.write(contentsOf: Data(bytes))
                } catch {
                    throw ClientError.local("cannot write \(temporary): \(error.localizedDescription)")
                }
            }
            try sync(handle.fileDescriptor, path: temporary)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw ClientError.local("cannot rename \(temporary) to \(path): \(reason)")
        }
        syncFolder(folder)
    }

    /// Removes the temporary files `replace` left beside `path` when a crash
    /// stopped it (`.<name>.<UUID>`): they were never renamed into place.
    /// Call it only while holding what `path` belongs to (the state lock).
    static func removeLeftovers(of path: String) {
        let folder = folder(of: path)
        let prefix = ".\((path as NSString).lastPathComponent)."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = false
        for name in names where name.hasPrefix(prefix) && UUID(uuidString: String(name.dropFirst(prefix.count))) != nil {
            removed = (try? FileManager.default.removeItem(atPath: folder + "/" + name)) != nil || removed
        }
        if removed { syncFolder(folder) }
    }

    /// The folder `path` is in ("." for a bare name).
    private static func folder(of path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }

    /// Makes what was written to `descriptor` durable: `fcntl(F_FULLFSYNC)`
    /// on Apple platforms, where `fsync` leaves it in the drive's cache
    /// (a power loss can still take it), falling back to `fsync` where the
    /// file system does not take it; `fsync` elsewhere.
    static func sync(_ descriptor: Int32, path: String) throws {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return }
        #endif
        while fsync(descriptor) != 0 {
            guard errno == EINTR else { throw ClientError.local("cannot sync \(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// Removes `path` durably; false when there was nothing to remove.
    static func remove(_ path: String) throws -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw ClientError.local("cannot remove \(path): \(error.localizedDescription)")
        }
        syncFolder((path as NSString).deletingLastPathComponent)
        return true
    }

    /// Takes an exclusive advisory lock (`flock`) on `path`, made 0600 when
    /// absent, and returns its descriptor, held until `unlock`; nil when
    /// another open of the file holds it (another process, or another
    /// descriptor in this one). The kernel drops the lock with the
    /// descriptor, so a process that dies, however it dies, releases it.
    static func lock(_ path: String) throws -> Int32? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ClientError.local("cannot open \(path): \(String(cString: strerror(errno)))") }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            close(descriptor)
            if failure == EWOULDBLOCK { return nil }
            throw ClientError.local("cannot lock \(path): \(String(cString: strerror(failure)))")
        }
        return descriptor
    }

    /// Releases a lock `lock` took.
    static func unlock(_ descriptor: Int32) {
        close(descriptor)
    }

    /// `path` opened for reading and writing, made 0600 when absent (its
    /// folder then synced, so that the new name is durable).
    static func openForUpdating(_ path: String) throws -> FileHandle {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw ClientError.local("cannot create \(path)")
            }
            syncFolder(folder(of: path))
        }
        guard let handle = FileHandle(forUpdatingAtPath: path) else { throw ClientError.local("cannot open \(path) for writing") }
        return handle
    }

    /// The size of the file open as `handle`.
    static func size(of handle: FileHandle, path: String) throws -> UInt64 {
        do {
            return try handle.seekToEnd()
        } catch {
            throw ClientError.local("cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// `count` bytes of the file open as `handle`, from `offset` (fewer
    /// where the file ends sooner).
    static func read(_ handle: FileHandle, at offset: UInt64, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(handle.fileDescriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw ClientError.local("cannot read \(path): \(String(cString: strerror(errno)))") }
            guard got > 0 else { break }
            filled += got
        }
        return Array(bytes[..<filled])
    }

    /// Writes `bytes` at `offset` (the end of what is sound) and syncs the
    /// file: on return they are on disk. When that fails, the file is cut
    /// back to `offset` (what was written was never acknowledged), and
    /// `AppendFailure.intact` says whether the cut worked.
    static func append(_ bytes: [UInt8], to handle: FileHandle, at offset: UInt64, path: String) throws {
        do {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: Data(bytes))
            try sync(handle.fileDescriptor, path: path)
        } catch {
            let reason = (error as? ClientError)?.detail ?? error.localizedDescription
            do {
                try handle.truncate(atOffset: offset)
                try sync(handle.fileDescriptor, path: path)
            } catch {
                throw AppendFailure(path: path, reason: reason, intact: false)
            }
            throw AppendFailure(path: path, reason: reason, intact: true)
        }
    }

    /// Why `append` failed, and whether the file is as it was before.
    struct AppendFailure: Error {
        var path: String
        var reason: String
        var intact: Bool
    }

    /// Makes a rename or removal in `folder` durable where the platform
    /// lets a folder be synced (Linux, Darwin); best effort elsewhere.
    static func syncFolder(_ folder: String) {
        guard let handle = FileHandle(forReadingAtPath: folder.isEmpty ? "." : folder) else { return }
        try? sync(handle.fileDescriptor, path: folder)
        try? handle.close()
    }

    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(SHA256.hash(data: bytes))
        #else
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
        #endif
    }
}

extension JSONText {
    /// SHA-256 of the compact bytes, lowercase hex: what changed and what did not.
    package var sha256: String { ASCII.hex(Platform.sha256(bytes)) }
}
