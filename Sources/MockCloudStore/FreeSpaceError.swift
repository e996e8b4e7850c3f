import MockCloudSystem

/// A change refused before it began because the data directory's file
/// system has less free space than the configured floor.
package struct FreeSpaceError: Error, Equatable, CustomStringConvertible {
    /// Bytes an unprivileged writer may still use there.
    package let available: Int64
    /// The floor (`MOCKCLOUD_MIN_FREE_MB`), in bytes.
    package let floor: Int64

    package init(available: Int64, floor: Int64) {
        self.available = available
        self.floor = floor
    }

    /// For the server log.
    package var description: String {
        "refused a write: \(available) bytes free on the data directory's file system, below"
            + " MOCKCLOUD_MIN_FREE_MB (\(floor) bytes); free some space or lower the floor"
    }
}

extension FreeSpaceError {
    /// 64 MiB: room for nginx to spool eight 8 MiB bulk bodies at once
    /// beside the box's logs and package updates, on a card of a few GiB.
    package static let defaultFloor: Int64 = 64 << 20

    /// The file, under the lock folder, whose existence says that the log
    /// was already told the file system reports no size.
    package static let noSizeToldName = "free-space-unknown"

    /// Throws when the file system holding `root` (the data directory) has
    /// less than `floor` bytes free for unprivileged writers (a floor of 0
    /// checks nothing). When the free space cannot be read, the write goes
    /// on and reports its own failure. A file system that reports no size
    /// at all (0 blocks: LazyFS and other FUSE file systems) has no free
    /// space to compare either: no floor, and `notice` is told so once per
    /// data directory (`noSizeToldName` remembers it).
    package static func check(
        _ root: String, floor: Int64,
        space: (String) throws -> FileSystemSpace = Sys.space(of:),
        notice: (String) -> Void = logLine
    ) throws {
        guard floor > 0, let space = try? space(root) else { return }
        if space.size == 0 {
            tellOnce(root, notice)
            return
        }
        if space.available < floor { throw FreeSpaceError(available: space.available, floor: floor) }
    }

    /// Tells `notice` that `root` gets no floor, unless an earlier process
    /// did: the first to create the marker file says it.
    private static func tellOnce(_ root: String, _ notice: (String) -> Void) {
        let data = DataDirectory(root)
        let marker = data.marker(noSizeToldName)
        do {
            try data.makeLocks()
            Sys.close(try Sys.open(marker, .writeOnly | .create | .exclusive | .noFollow))
        } catch let error as SystemError where error.errno == .exists {
            return
        } catch {
            // Nothing remembers it: say it now, and again next time.
        }
        notice("the data directory's file system (\(root)) reports no size (statfs: 0 blocks, as FUSE file systems"
            + " such as LazyFS do), so writes there get no free-space floor (MOCKCLOUD_MIN_FREE_MB);"
            + " said once: remove \(marker) to hear it again")
    }

    /// One line on stderr, which reaches nginx's error log.
    package static func logLine(_ line: String) {
        try? Sys.writeAll(.standardError, Array("mockcloud: \(line)\n".utf8), path: "stderr")
    }
}
