import Glibc

/// A failed system call: which call, on which path, and the C `errno` it left.
package struct SystemError: Error, CustomStringConvertible, Equatable {
    /// The C function that failed, e.g. `open`.
    package let call: String
    /// The path it worked on, when there is one.
    package let path: String
    /// The C error, e.g. `ENOSPC`.
    package let errno: Errno

    package init(_ call: String, path: String = "", errno: Errno) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    /// A failure whose C error is the raw `errno` value.
    package init(_ call: String, path: String = "", errno code: Int32) {
        self.init(call, path: path, errno: Errno(rawValue: code))
    }

    package var description: String {
        let reason = errno.description
        return path.isEmpty ? "\(call): \(reason)" : "\(call) \(path): \(reason)"
    }

    /// True for "the disk or the quota is full".
    package var isNoSpace: Bool { errno == .noSpace || errno == .quotaExceeded }
    /// True for "this place cannot be written".
    package var isNotWritable: Bool {
        errno == .permissionDenied || errno == .notPermitted || errno == .readOnlyFileSystem
    }
}
