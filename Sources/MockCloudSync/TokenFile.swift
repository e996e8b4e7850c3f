import MockCloudClient
import MockCloudSystem

extension SyncOptions.TokenSource {
    /// The bearer token: the variable's value, or the file's one line (its
    /// final newline dropped), the file readable by its owner alone.
    func read() throws -> String {
        switch self {
        case .environment(let token):
            return token
        case .file(let path):
            var bytes: ArraySlice<UInt8>
            do {
                bytes = try OwnerOnlyFile.read(path, limit: 4097)[...]
            } catch let error as OwnerOnlyFile.TooOpen {
                throw ClientError.local("token file \(path) \(error.problem)")
            } catch let error as SystemError {
                throw ClientError.local("token file \(path) cannot be read: \(error.errno)")
            }
            if bytes.last == 0x0A { bytes.removeLast() }
            if bytes.last == 0x0D { bytes.removeLast() }
            guard bytes.count <= 4096, let token = SyncOptions.token(bytes) else {
                throw ClientError.local("token file \(path) must hold one token on one line, as mockcloud-admin token prints it")
            }
            return token
        }
    }
}
