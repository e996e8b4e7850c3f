import Dispatch
import Glibc
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// `ChangeWatch` wakes for the followed file only, from whatever folder of
/// its way exists, and ends on its deadline or when the answer's reader goes.
@Suite struct ChangeWatchTests {
    /// A deadline `seconds` from now.
    static func inSeconds(_ seconds: Double) -> Int64 { Sys.monotonicNanos() + Int64(seconds * 1e9) }

    /// Runs `change` on another thread after `delay` seconds.
    static func later(_ delay: Double, _ change: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: change)
    }

    @Test func aFileRenamedIntoPlaceWakesItsWatcher() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "inbox/k/changes.log")
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("inbox/k/changes.log"), under: dir.path)
        let path = dir.file("inbox/k")
        Self.later(0.1) { _ = try? AtomicFile.write(Array("{}".utf8), to: "changes.log", in: path) }
        let started = Sys.monotonicNanos()
        #expect(try watch.sleep(until: Self.inSeconds(5)) == .changed)
        #expect(Sys.monotonicNanos() - started < 3_000_000_000)
    }

    @Test func aFileClosedAfterWritingWakesItsWatcher() throws {
        let dir = try TemporaryDirectory()
        try dir.write("", to: "d/changes.log")
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("d/changes.log"), under: dir.path)
        let path = dir.file("d/changes.log")
        Self.later(0.1) {
            let fd = open(path, O_WRONLY | O_APPEND)
            _ = write(fd, "x", 1)
            close(fd)
        }
        #expect(try watch.sleep(until: Self.inSeconds(5)) == .changed)
    }

    @Test func otherFilesInTheFolderDoNotWakeIt() throws {
        let dir = try TemporaryDirectory()
        try dir.write("{}", to: "user_settings/u1.json")
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("user_settings/u1.json"), under: dir.path)
        let folder = dir.file("user_settings")
        Self.later(0.05) { _ = try? AtomicFile.write(Array("{}".utf8), to: "u2.json", in: folder) }
        #expect(try watch.sleep(until: Self.inSeconds(0.5)) == .timedOut)
    }

    @Test func aMissingFolderIsFollowedFromTheNearestOneThatExists() throws {
        let dir = try TemporaryDirectory()
        let file = dir.file("inbox/k/changes.log")
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(file, under: dir.path)
        let root = dir.path
        Self.later(0.1) { mkdir(root + "/inbox", 0o700) }
        #expect(try watch.sleep(until: Self.inSeconds(5)) == .changed)
        // Followed again, it reaches one folder further down.
        try watch.follow(file, under: dir.path)
        Self.later(0.1) { mkdir(root + "/inbox/k", 0o700) }
        #expect(try watch.sleep(until: Self.inSeconds(5)) == .changed)
        try watch.follow(file, under: dir.path)
        Self.later(0.1) { _ = try? AtomicFile.write(Array("{}".utf8), to: "changes.log", in: root + "/inbox/k") }
        #expect(try watch.sleep(until: Self.inSeconds(5)) == .changed)
    }

    @Test func theDeadlineEndsTheSleepAndNotBefore() throws {
        let dir = try TemporaryDirectory()
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("x.json"), under: dir.path)
        let started = Sys.monotonicNanos()
        #expect(try watch.sleep(until: Self.inSeconds(0.3)) == .timedOut)
        #expect(Sys.monotonicNanos() - started >= 300_000_000)
    }

    @Test func theAnswersReaderGoingAwayEndsTheSleep() throws {
        let dir = try TemporaryDirectory()
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("x.json"), under: dir.path)
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[1]) }
        let reader = ends[0]
        Self.later(0.1) { close(reader) }
        let started = Sys.monotonicNanos()
        #expect(try watch.sleep(until: Self.inSeconds(5), watching: [FileDescriptor(rawValue: ends[1])]) == .abandoned)
        #expect(Sys.monotonicNanos() - started < 3_000_000_000)
    }

    /// A CGI program's connection to the server (fcgiwrap's, inherited): the
    /// server closing it, as nginx does when the client goes away, ends the
    /// sleep; the answer's pipe, still open beside it, does not hold it.
    @Test func theServerClosingTheConnectionEndsTheSleep() throws {
        let dir = try TemporaryDirectory()
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("x.json"), under: dir.path)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var answer: [Int32] = [0, 0]
        #expect(pipe(&answer) == 0)
        defer { close(pair[1]); close(answer[0]); close(answer[1]) }
        let server = pair[0]
        Self.later(0.1) { close(server) }
        let paths = [FileDescriptor(rawValue: answer[1]), FileDescriptor(rawValue: pair[1])]
        #expect(try watch.sleep(until: Self.inSeconds(30), watching: paths) == .abandoned)
    }

    @Test func aConnectionWhosePeerOnlyStopsSendingEndsTheSleepToo() throws {
        let dir = try TemporaryDirectory()
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("x.json"), under: dir.path)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let server = pair[0]
        Self.later(0.1) { _ = shutdown(server, Int32(SHUT_WR)) }
        #expect(try watch.sleep(until: Self.inSeconds(30), watching: [FileDescriptor(rawValue: pair[1])]) == .abandoned)
    }

    @Test func aQuietConnectionDoesNotEndTheSleep() throws {
        let dir = try TemporaryDirectory()
        var watch = try ChangeWatch()
        defer { watch.close() }
        try watch.follow(dir.file("x.json"), under: dir.path)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        #expect(try watch.sleep(until: Self.inSeconds(0.3), watching: [FileDescriptor(rawValue: pair[1])]) == .timedOut)
    }
}
