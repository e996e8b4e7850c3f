/// A file that holds a secret (the server's key and token files, the sync
/// tool's token file): read only while its owner alone may read it, as ssh
/// does for its keys.
package enum OwnerOnlyFile {
    /// The file's mode lets group or others read it.
    package struct TooOpen: Error, Equatable {
        package let path: String
        /// `st_mode` (type bits included).
        package let mode: UInt32

        package init(path: String, mode: UInt32) {
            self.path = path
            self.mode = mode
        }

        /// What is wrong and the command that fixes it, after the file's name:
        /// `is readable by group or others (mode 0644); run chmod 600 PATH`.
        package var problem: String {
            let digits = String(mode & 0o7777, radix: 8)
            let octal = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
            return "is readable by group or others (mode \(octal)); run chmod 600 \(path)"
        }
    }

    /// The bytes of the file at `path`, at most `limit`; throws `TooOpen`
    /// when group or others may read it, a `SystemError` when it cannot be read.
    package static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = try Sys.open(path, .readOnly)
        defer { Sys.close(fd) }
        let mode = try Sys.mode(fd, path: path)
        if mode & 0o077 != 0 { throw TooOpen(path: path, mode: mode) }
        return try Sys.readAll(fd, path: path, limit: limit)
    }
}
