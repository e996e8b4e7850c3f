import Glibc

/// A failed system call: which call, on which path, and the C `errno` it left.
package struct SystemError: Error, CustomStringConvertible, Equatable {
    /// The C function that failed, e.g. `open`.
    package let call: String
    /// The path it worked on, when there is one.
    package let path: String
    /// The C error, e.g. `ENOSPC`.
    package let errno: Int32

    package init(_ call: String, path: String = "", errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    package var description: String {
        let reason = String(cString: strerror(errno))
        return path.isEmpty ? "\(call): \(reason)" : "\(call) \(path): \(reason)"
    }

    /// True for "the disk or the quota is full".
    package var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }
    /// True for "this place cannot be written".
    package var isNotWritable: Bool { errno == EACCES || errno == EPERM || errno == EROFS }
}
