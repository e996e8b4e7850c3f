import Foundation
import MockCloudJSON
import MockCloudWire
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(COpenSSL)
import COpenSSL
#endif

/// What the client needs of the platform, in one place: files, SHA-256.
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
    /// written and fsynced, renamed over it, the folder fsynced. A crash
    /// leaves the old file or the new one.
    static func replace(_ path: String, with bytes: [UInt8]) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder.isEmpty ? "." : folder) + "/.\((path as NSString).lastPathComponent).\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: temporary, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: temporary)
        else { throw ClientError.local("cannot create \(temporary)") }
        do {
            defer { try? handle.close() }
            try handle.write(contentsOf: Data(bytes))
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ClientError.local("cannot write \(temporary): \(error.localizedDescription)")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw ClientError.local("cannot rename \(temporary) to \(path): \(reason)")
        }
        syncFolder(folder.isEmpty ? "." : folder)
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

    /// Makes a rename or removal in `folder` durable where the platform
    /// lets a folder be synced (Linux, Darwin); best effort elsewhere.
    private static func syncFolder(_ folder: String) {
        guard let handle = FileHandle(forReadingAtPath: folder.isEmpty ? "." : folder) else { return }
        try? handle.synchronize()
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
