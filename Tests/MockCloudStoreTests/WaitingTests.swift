import Dispatch
import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// Reads that wait for a change (docs/API.md §3, §4 `wait`): the feed and
/// settings, with writers on other threads taking the key's lock as another
/// process would (flock is per open file, so threads contend like processes).
@Suite(.serialized) struct WaitingTests {
    let data: TemporaryDirectory
    let key = UserKey("u1")!

    init() throws {
        data = try TemporaryDirectory()
    }

    func store(compactAt minimum: Int = 1024, horizon: Int64 = 30 * 86400, clock: Timestamp.Micros? = nil) -> InboxStore {
        var settings = InboxSettings()
        settings.compactionMinimumRecords = minimum
        settings.tombstoneHorizonSeconds = horizon
        settings.minimumFreeBytes = 0
        if let clock { return InboxStore(root: data.path, key: key, settings: settings, clock: { clock }) }
        return InboxStore(root: data.path, key: key, settings: settings)
    }

    static func put(_ store: InboxStore, _ id: String, version: Int64 = 0, source: String? = nil) throws {
        _ = try store.put(MessageID(id)!, version: version, source: source.map { DeviceID($0)! }, body: .object(JSONObject()))
    }

    /// The box's places for waiting requests, as a deployment might give them.
    static let places = 6

    /// `seconds` from now, nobody watching the answer.
    func limit(_ seconds: Int) -> WaitLimit { WaitLimit(seconds: seconds, output: nil, places: Self.places) }

    /// Runs `change` on another thread after `delay` seconds.
    func later(_ delay: Double, _ change: @escaping @Sendable () throws -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { try? change() }
    }

    /// Seconds `body` took.
    func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let started = Sys.monotonicNanos()
        let result = try body()
        return (result, Double(Sys.monotonicNanos() - started) / 1e9)
    }

    @Test func changesAlreadyThereAnswerAtOnce() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let (page, seconds) = try timed { try inbox.changes(after: nil, limit: 10, excludingSource: nil, waiting: limit(30)) }
        #expect(page.messages.map(\.envelope.id.rawValue) == ["a"])
        #expect(seconds < 5)
    }

    @Test func aWriteDuringTheWaitEndsIt() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        later(0.2) { try Self.put(inbox, "b") }
        let (page, seconds) = try timed { try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30)) }
        #expect(page.messages.map(\.envelope.id.rawValue) == ["b"])
        #expect(page.hasMore == false)
        #expect(seconds < 10)
    }

    @Test func aDeletionDuringTheWaitEndsIt() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        later(0.2) { _ = try inbox.delete(MessageID("a")!, source: nil) }
        let page = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30))
        #expect(page.deleted.map(\.id.rawValue) == ["a"])
    }

    @Test func theFirstWriteToAnEmptyInboxEndsAWaitFromNothing() throws {
        let inbox = store()
        later(0.2) { try Self.put(inbox, "first") }
        let page = try inbox.changes(after: nil, limit: 10, excludingSource: nil, waiting: limit(30))
        #expect(page.messages.map(\.envelope.id.rawValue) == ["first"])
    }

    @Test func whenTheWaitRunsOutTheEmptyPageKeepsTheAnchor() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        let (page, seconds) = try timed { try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(1)) }
        #expect(page.page == FeedPage(messages: [], deleted: [], anchor: anchor, hasMore: false))
        #expect(seconds >= 1 && seconds < 5)
    }

    @Test func theDevicesOwnWritesDoNotEndItsWaitButAnothersDo() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        later(0.2) { try Self.put(inbox, "own-1", source: "phone") }
        later(0.5) { try Self.put(inbox, "own-2", source: "phone") }
        later(1.0) { try Self.put(inbox, "theirs", source: "mirror") }
        let (page, seconds) = try timed {
            try inbox.changes(after: anchor, limit: 10, excludingSource: DeviceID("phone"), waiting: limit(30))
        }
        #expect(page.messages.map(\.envelope.id.rawValue) == ["theirs"])
        #expect(page.anchor.seq == 4)
        #expect(seconds >= 0.9)
    }

    @Test func onlyOwnWritesUntilTheEndAnswerTheEmptyPagePastThem() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        later(0.2) { try Self.put(inbox, "own", source: "phone") }
        let page = try inbox.changes(after: anchor, limit: 10, excludingSource: DeviceID("phone"), waiting: limit(1))
        #expect(page.messages.isEmpty && page.deleted.isEmpty)
        #expect(page.anchor.seq == 2)  // past the echo, as a read without wait would be
    }

    @Test func aCompactionDuringTheWaitNeitherEndsItNorLosesTheNextWrite() throws {
        let inbox = store(compactAt: 4)
        for i in 0..<3 { try Self.put(inbox, "m\(i)", source: "mirror") }
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        // The reader's own fourth record makes compaction due, which rewrites
        // the log and renames it into place: the reader wakes, finds only
        // its own echo, and waits on.
        later(0.2) {
            try Self.put(inbox, "m0", version: 1, source: "phone")
            try inbox.upkeep()
        }
        later(0.8) { try Self.put(inbox, "after", source: "mirror") }
        let (page, seconds) = try timed {
            try inbox.changes(after: anchor, limit: 10, excludingSource: DeviceID("phone"), waiting: limit(30))
        }
        #expect(page.messages.map(\.envelope.id.rawValue) == ["after"])
        #expect(page.anchor.seq == 5)
        #expect(seconds >= 0.7)
        let log = try #require(try ChangeLog.openForReading(inbox.logPath))
        defer { log.close() }
        #expect(log.header.records == 3)  // compacted: m1, m2 and m0's latest
    }

    @Test func aReaderHoldingTheSharedLockBrieflyDoesNotMakeTheUpkeepSkipACompaction() throws {
        let inbox = store(compactAt: 4)
        for i in 0..<5 { try Self.put(inbox, "m\(i)", version: Int64(i)) }
        // What a woken waiter does the moment the writer lets the lock go.
        let lock = KeyLock.path(root: data.path, store: .inbox, key: key)
        let held = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let fd = open(lock, O_RDONLY)
            _ = flock(fd, LOCK_SH)
            held.signal()
            usleep(30_000)
            close(fd)
        }
        held.wait()
        try inbox.upkeep()
        let log = try #require(try ChangeLog.openForReading(inbox.logPath))
        defer { log.close() }
        #expect(log.header.records == 5)  // compacted after the reader let go
    }

    @Test func anInboxReplacedDuringTheWaitIs410AtOnce() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        // A restore: another inbox (another generation) takes this one's place.
        let other = try TemporaryDirectory()
        var settings = InboxSettings()
        settings.minimumFreeBytes = 0
        let restored = InboxStore(root: other.path, key: key, settings: settings)
        try Self.put(restored, "a")
        let (from, to, away) = (other.file("inbox/u1"), data.file("inbox/u1"), data.file("old-u1"))
        later(0.2) {
            rename(to, away)
            rename(from, to)
        }
        let started = Sys.monotonicNanos()
        #expect(throws: InboxError.self) {
            _ = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30))
        }
        #expect(Sys.monotonicNanos() - started < 10_000_000_000)
    }

    @Test func noLockIsHeldWhileItWaits() throws {
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        let lock = KeyLock.path(root: data.path, store: .inbox, key: key)
        let free = DispatchSemaphore(value: 0)
        later(0.3) {
            let fd = open(lock, O_RDWR)
            defer { close(fd) }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { free.signal() }
        }
        _ = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(1))
        #expect(free.wait(timeout: .now() + 1) == .success)
    }

    @Test func settingsWaitUntilTheDocumentChanges() throws {
        let settings = SettingsStore(root: data.path, minimumFreeBytes: 0)
        try settings.replace(key, with: JSONObject(), given: Preconditions(ifMatch: nil, ifNoneMatch: nil))
        let first = try settings.read(key)
        let key = self.key
        later(0.2) {
            var document = JSONObject()
            document["units"] = .string("metric")
            try settings.replace(key, with: document, given: Preconditions(ifMatch: nil, ifNoneMatch: nil))
        }
        let bytes = try settings.read(key, after: first, waiting: limit(30)) { $0 != first }
        #expect(bytes != first)
        #expect(String(decoding: bytes ?? [], as: UTF8.self).contains("metric"))
    }

    @Test func aWaitPastTheBoxsPlacesIsRefusedAtOnce() throws {
        try data.write("", to: ".locks/keep")
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for n in 0..<Self.places {
            let fd = open(data.file(".locks/waiting.\(n).lock"), O_RDWR | O_CREAT, 0o600)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
            held.append(fd)
        }
        let inbox = store()
        try Self.put(inbox, "a")
        let anchor = try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor
        #expect(throws: WaitError.tooManyWaiting(limit: Self.places)) {
            _ = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30))
        }
        // Changes already there still answer: only a read that would sleep needs a place.
        #expect(try inbox.changes(after: nil, limit: 10, excludingSource: nil, waiting: limit(30)).messages.count == 1)
        close(held.removeLast())
        #expect(try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(1)).messages.isEmpty)
    }
}
