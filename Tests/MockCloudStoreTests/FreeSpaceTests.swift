import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The free-space floor: writes stop before the file system is full, and a
/// file system that reports no size at all gets no floor, said once.
@Suite struct FreeSpaceTests {
    let data: TemporaryDirectory
    static let floor: Int64 = 64 << 20

    init() throws { data = try TemporaryDirectory() }

    @Test func belowTheFloorAWriteIsRefusedWithWhatIsFree() throws {
        #expect(throws: FreeSpaceError(available: 1 << 20, floor: Self.floor)) {
            try FreeSpaceError.check(data.path, floor: Self.floor, space: { _ in FileSystemSpace(size: 1 << 30, available: 1 << 20) })
        }
    }

    @Test func atTheFloorAndAboveItAWriteGoesOn() throws {
        try FreeSpaceError.check(data.path, floor: Self.floor, space: { _ in FileSystemSpace(size: 1 << 30, available: Self.floor) })
    }

    @Test func aFloorOfZeroDoesNotAskTheFileSystem() throws {
        try FreeSpaceError.check(data.path, floor: 0, space: { _ in
            Issue.record("statvfs was called")
            return FileSystemSpace(size: 0, available: 0)
        })
    }

    @Test func aFileSystemWhoseSpaceCannotBeReadLetsTheWriteReportItsOwnFailure() throws {
        try FreeSpaceError.check(data.path, floor: Self.floor, space: { path in
            throw SystemError("statvfs", path: path, errno: 5)
        })
    }

    @Test func aFileSystemThatReportsNoSizeGetsNoFloorAndTheLogIsToldOnce() throws {
        let noSize: (String) throws -> FileSystemSpace = { _ in FileSystemSpace(size: 0, available: 0) }
        var lines: [String] = []
        for _ in 0..<3 {
            try FreeSpaceError.check(data.path, floor: Self.floor, space: noSize, notice: { lines.append($0) })
        }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("reports no size") == true)
        #expect(lines.first?.contains("no free-space floor") == true)
        #expect(lines.first?.contains(data.path + "/.locks/" + FreeSpaceError.noSizeToldName) == true)
        #expect(data.entries(".locks") == [FreeSpaceError.noSizeToldName])
    }

    @Test func theRealFileSystemOfATemporaryDirectoryReportsItsSize() throws {
        let space = try Sys.space(of: data.path)
        #expect(space.size > 0)
        #expect(space.available <= space.size)
    }
}
