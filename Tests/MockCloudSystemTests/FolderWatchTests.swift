import Glibc
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// `FolderWatch` reports a wanted file once it is whole (closed after
/// writing, renamed in) or gone, never one still being written, and says
/// when events were lost or the folder itself went away.
@Suite struct FolderWatchTests {
    /// The names a sync tool sends: `<id>.json`, not hidden.
    static let messages: @Sendable (String) -> Bool = { !$0.hasPrefix(".") && $0.hasSuffix(".json") }

    /// A deadline `seconds` from now.
    static func inSeconds(_ seconds: Double) -> Int64 { Sys.monotonicNanos() + Int64(seconds * 1e9) }

    /// The changes reported until `names` all were, or 10 s passed.
    static func changes(_ watch: FolderWatch, covering names: Set<String>) throws -> FolderChanges {
        var all = FolderChanges()
        let deadline = inSeconds(10)
        while !names.isSubset(of: all.names.keys), Sys.monotonicNanos() < deadline {
            all.merge(try watch.wait(until: deadline))
        }
        return all
    }

    /// Writes `text` to `path` and closes it, as a scanner writing in place would.
    static func write(_ text: String, to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }

    @Test func aFileRenamedInIsCompleteAtOnce() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "in/.scan-1.json.part")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(rename(dir.file("in/.scan-1.json.part"), dir.file("in/scan-1.json")) == 0)
        #expect(try Self.changes(watch, covering: ["scan-1.json"]) == FolderChanges(names: ["scan-1.json": .complete]))
    }

    @Test func aFileStillBeingWrittenIsOnlyTouchedUntilClosed() throws {
        let dir = try TemporaryDirectory()
        try dir.write("", to: "in/.keep")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        let fd = open(dir.file("in/scan-2.json"), O_WRONLY | O_CREAT, 0o600)
        _ = Glibc.write(fd, "{\"weigh", 7)
        #expect(try watch.wait(until: Self.inSeconds(10)) == FolderChanges(names: ["scan-2.json": .touched]))
        #expect(try watch.wait(until: Self.inSeconds(0.3)).isEmpty)
        _ = Glibc.write(fd, "t\": 1}", 6)
        close(fd)
        #expect(try Self.changes(watch, covering: ["scan-2.json"]) == FolderChanges(names: ["scan-2.json": .complete]))
    }

    /// Ways in that close nothing: a hard link, a chmod, a touch.
    @Test func aHardLinkAChmodAndATouchAreTouched() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "elsewhere.json")
        try dir.write("{}", to: "in/locked.json")
        try dir.write("{}", to: "in/old.json")
        #expect(chmod(dir.file("in/locked.json"), 0) == 0)
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(link(dir.file("elsewhere.json"), dir.file("in/linked.json")) == 0)
        #expect(chmod(dir.file("in/locked.json"), 0o644) == 0)
        #expect(utimensat(AT_FDCWD, dir.file("in/old.json"), nil, 0) == 0)
        #expect(try Self.changes(watch, covering: ["linked.json", "locked.json", "old.json"])
            == FolderChanges(names: ["linked.json": .touched, "locked.json": .touched, "old.json": .touched]))
    }

    @Test func aFileDeletedOrRenamedAwayIsRemoved() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "in/a.json")
        try dir.write("{}", to: "in/b.json")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(unlink(dir.file("in/a.json")) == 0)
        #expect(rename(dir.file("in/b.json"), dir.file("elsewhere.json")) == 0)
        #expect(try Self.changes(watch, covering: ["a.json", "b.json"])
            == FolderChanges(names: ["a.json": .removed, "b.json": .removed]))
    }

    @Test func aNamesLastEventIsWhatHolds() throws {
        let dir = try TemporaryDirectory()
        try dir.write("", to: "in/.keep")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        Self.write("{}", to: dir.file("in/gone.json"))
        #expect(unlink(dir.file("in/gone.json")) == 0)
        #expect(unlink(dir.file("in/.keep")) == 0)
        Self.write("{}", to: dir.file("in/back.json"))
        #expect(unlink(dir.file("in/back.json")) == 0)
        Self.write("{}", to: dir.file("in/back.json"))
        // Everything is queued before the first read, which sees all of it.
        #expect(try Self.changes(watch, covering: ["gone.json", "back.json"])
            == FolderChanges(names: ["gone.json": .removed, "back.json": .complete]))
    }

    @Test(arguments: [".scan-3.json.swp", "scan-3.json.tmp", ".mockcloud-sync-pushed", "scan-3.txt", "notes"])
    func namesItDoesNotWantAreNeverReportedAndDoNotEndTheWait(name: String) throws {
        let dir = try TemporaryDirectory()
        try dir.write("", to: "in/.keep")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        Self.write("{}", to: dir.file("in/" + name))
        #expect(rename(dir.file("in/" + name), dir.file("in/" + name + "~")) == 0)
        #expect(try watch.wait(until: Self.inSeconds(0.3)).isEmpty)
    }

    @Test func aFolderCreatedInsideIsNotAFile() throws {
        let dir = try TemporaryDirectory()
        try dir.write("", to: "in/.keep")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(mkdir(dir.file("in/odd.json.d"), 0o700) == 0)
        #expect(rename(dir.file("in/odd.json.d"), dir.file("in/odd.json")) == 0)
        #expect(rmdir(dir.file("in/odd.json")) == 0)
        #expect(try watch.wait(until: Self.inSeconds(0.3)).isEmpty)
    }

    @Test func theFolderRemovedEndsTheWatchWithItsReason() throws {
        let dir = try TemporaryDirectory()
        #expect(mkdir(dir.file("in"), 0o700) == 0)
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(rmdir(dir.file("in")) == 0)
        #expect(try watch.wait(until: Self.inSeconds(10)).folderGone == "it was removed")
    }

    @Test func theFolderRenamedEndsTheWatchWithItsReason() throws {
        let dir = try TemporaryDirectory()
        #expect(mkdir(dir.file("in"), 0o700) == 0)
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        #expect(rename(dir.file("in"), dir.file("old-in")) == 0)
        #expect(try watch.wait(until: Self.inSeconds(10)).folderGone == "it was moved or renamed")
    }

    @Test func aMissingFolderOrAFileIsRefusedWithItsPath() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "file.json")
        #expect(throws: SystemError("inotify_add_watch", path: dir.file("none"), errno: .noSuchFileOrDirectory)) {
            try FolderWatch(dir.file("none"), wanted: Self.messages)
        }
        #expect(throws: SystemError("inotify_add_watch", path: dir.file("file.json"), errno: .notDirectory)) {
            try FolderWatch(dir.file("file.json"), wanted: Self.messages)
        }
    }

    /// More events than the kernel queues (max_queued_events) while nobody
    /// reads: the reader learns that it must look at the whole folder.
    @Test func lostEventsAskForALookAtEverything() throws {
        // One read: a sysctl file answers nothing at an offset past 0.
        var text = [UInt8](repeating: 0, count: 32)
        let fd = open("/proc/sys/fs/inotify/max_queued_events", O_RDONLY)
        let got = read(fd, &text, text.count)
        close(fd)
        let limit = Int(String(decoding: text.prefix(max(got, 0)), as: UTF8.self).filter(\.isNumber)) ?? 0
        guard limit > 0, limit <= 1 << 20 else { return }  // no limit to pass in reasonable time
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "in/a.json")
        let watch = try FolderWatch(dir.file("in"), wanted: Self.messages)
        defer { watch.close() }
        // Each rename queues two events (moved from, moved to).
        for n in 0..<(limit / 2 + 2) {
            let (from, to) = n % 2 == 0 ? ("a.json", "b.json") : ("b.json", "a.json")
            #expect(rename(dir.file("in/" + from), dir.file("in/" + to)) == 0)
        }
        var seen = FolderChanges()
        while !seen.overflowed {
            let more = try watch.wait(until: Self.inSeconds(2))
            if more.isEmpty { break }
            seen.merge(more)
        }
        #expect(seen.overflowed)
    }

    @Test func laterChangesWinWhenMerged() {
        var changes = FolderChanges(names: ["a.json": .complete, "b.json": .removed])
        changes.merge(FolderChanges(names: ["a.json": .removed, "c.json": .complete], overflowed: true))
        changes.merge(FolderChanges(folderGone: "it was removed"))
        changes.merge(FolderChanges(folderGone: "it was moved or renamed"))
        #expect(changes == FolderChanges(names: ["a.json": .removed, "b.json": .removed, "c.json": .complete],
                                         overflowed: true, folderGone: "it was removed"))
        #expect(FolderChanges().isEmpty && !FolderChanges(overflowed: true).isEmpty)
    }

    @Test func aTouchAfterACloseLeavesTheFileComplete() {
        var changes = FolderChanges(names: ["a.json": .complete, "b.json": .removed, "c.json": .touched])
        changes.merge(FolderChanges(names: ["a.json": .touched, "b.json": .touched, "c.json": .complete]))
        #expect(changes == FolderChanges(names: ["a.json": .complete, "b.json": .touched, "c.json": .complete]))
    }
}
