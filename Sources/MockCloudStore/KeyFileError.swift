import MockCloudSystem

/// Why a private file (the HMAC key file, the token file) cannot be used.
/// Every request then fails; the server log and the admin tool
/// name the problem (`detail`), clients learn only that the server is
/// misconfigured. No message ever contains a secret.
package enum KeyFileError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String, file: PrivateFile.Kind = .hmacKeys)
    case tooOpen(path: String, mode: UInt32, file: PrivateFile.Kind = .hmacKeys)
    case malformed(path: String, line: Int, reason: String, file: PrivateFile.Kind = .hmacKeys)
    case noKeys(path: String)

    /// The sentence for the server log and the admin tool: it names the
    /// file and what to do, never a secret.
    package var detail: String {
        switch self {
        case .unreadable(let path, let reason, let file): return "\(file) \(path) cannot be read: \(reason)"
        case .tooOpen(let path, let mode, let file):
            return "\(file) \(path) \(OwnerOnlyFile.TooOpen(path: path, mode: mode).problem)"
        case .malformed(let path, let line, let reason, let file): return "\(file) \(path), line \(line): \(reason)"
        case .noKeys(let path): return "\(PrivateFile.Kind.hmacKeys) \(path) holds no key"
        }
    }

    package var description: String { detail }
}
