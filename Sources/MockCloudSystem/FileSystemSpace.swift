/// What `statvfs(3)` says of a file system, in bytes.
package struct FileSystemSpace: Sendable, Equatable {
    /// Its whole size: 0 when it reports none (some FUSE file systems).
    package let size: Int64
    /// What an unprivileged writer may still use: free blocks less the root reserve.
    package let available: Int64

    package init(size: Int64, available: Int64) {
        self.size = size
        self.available = available
    }
}
