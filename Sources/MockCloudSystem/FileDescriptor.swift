import Glibc

/// An open file: a descriptor the process owns, closed by whoever opened it
/// (`Sys.closing`). A type, not a bare `Int32`, so that a descriptor is never
/// taken for a count, a size or an error code.
package struct FileDescriptor: Sendable, Hashable {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    package static let standardInput = FileDescriptor(rawValue: 0)
    package static let standardOutput = FileDescriptor(rawValue: 1)
    package static let standardError = FileDescriptor(rawValue: 2)
    /// No file: what a holder of a descriptor keeps when it holds none.
    package static let closed = FileDescriptor(rawValue: -1)
}

/// How `Sys.open` opens a file: an access mode and `O_…` flags, joined
/// with `|` (`O_CLOEXEC` is always added). Not an `OptionSet`: its array
/// literals are generic code, whose run-time type work a CGI process would
/// pay on every request.
package struct OpenOptions: Sendable, Equatable {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Both sets of flags.
    @inline(__always)
    package static func | (a: OpenOptions, b: OpenOptions) -> OpenOptions {
        OpenOptions(rawValue: a.rawValue | b.rawValue)
    }

    /// Reading only (`O_RDONLY` is 0).
    package static let readOnly = OpenOptions(rawValue: O_RDONLY)
    package static let writeOnly = OpenOptions(rawValue: O_WRONLY)
    package static let readWrite = OpenOptions(rawValue: O_RDWR)
    package static let create = OpenOptions(rawValue: O_CREAT)
    /// With `create`: fail with `.exists` when the file is there.
    package static let exclusive = OpenOptions(rawValue: O_EXCL)
    package static let append = OpenOptions(rawValue: O_APPEND)
    /// A symbolic link at the path fails (`.tooManyLinks`), never followed.
    package static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
    package static let directory = OpenOptions(rawValue: O_DIRECTORY)
}

/// A C error number (`errno`), named for the ones the service tells apart.
package struct Errno: Sendable, Hashable, CustomStringConvertible {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// `ENOENT`
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EEXIST`
    package static let exists = Errno(rawValue: EEXIST)
    /// `ELOOP`: a symbolic link where `O_NOFOLLOW` allows none.
    package static let tooManyLinks = Errno(rawValue: ELOOP)
    /// `ENOTDIR`
    package static let notDirectory = Errno(rawValue: ENOTDIR)
    /// `EISDIR`
    package static let isDirectory = Errno(rawValue: EISDIR)
    /// `ENOSPC`
    package static let noSpace = Errno(rawValue: ENOSPC)
    /// `EDQUOT`
    package static let quotaExceeded = Errno(rawValue: EDQUOT)
    /// `EACCES`
    package static let permissionDenied = Errno(rawValue: EACCES)
    /// `EPERM`
    package static let notPermitted = Errno(rawValue: EPERM)
    /// `EROFS`
    package static let readOnlyFileSystem = Errno(rawValue: EROFS)
    /// `EINTR`: retried by `Sys`, never seen above it.
    package static let interrupted = Errno(rawValue: EINTR)
    /// `EWOULDBLOCK`: a lock another process holds, asked for without waiting.
    package static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    /// `EIO`
    package static let ioError = Errno(rawValue: EIO)
    /// `EMFILE`: this process (or user, for inotify instances) has too many.
    package static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// `ENFILE`
    package static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// `ENOMEM`
    package static let outOfMemory = Errno(rawValue: ENOMEM)

    /// The C library's sentence, e.g. "No such file or directory".
    package var description: String { String(cString: strerror(rawValue)) }

    /// This thread's `errno` now.
    static var current: Errno { Errno(rawValue: Glibc.errno) }
}
