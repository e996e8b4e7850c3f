import Dispatch
import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Synchronization
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
    static let places = 12

    /// `seconds` from now, nobody watching the answer; counted in `share` when given.
    func limit(_ seconds: Int, share: WaitShare? = nil) -> WaitLimit {
        WaitLimit(seconds: seconds, places: Self.places, share: share)
    }

    /// Takes place `n` as another process would, named for `address`
    /// (written only, not held, when `held` is false: a process that ended).
    func place(_ n: Int, for address: String, held: Bool = true) -> Int32 {
        let fd = open(data.file(".locks/waiting.\(n).lock"), O_RDWR | O_CREAT, 0o600)
        if held { #expect(flock(fd, LOCK_EX | LOCK_NB) == 0) }
        _ = ftruncate(fd, 0)
        #expect(pwrite(fd, address, address.utf8.count, 0) == address.utf8.count)
        return fd
    }

    /// An inbox with one message and the anchor after it.
    func inboxWithAnAnchor() throws -> (InboxStore, Anchor) {
        let inbox = store()
        try Self.put(inbox, "a")
        return (inbox, try inbox.changes(after: nil, limit: 10, excludingSource: nil).anchor)
    }

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

    @Test func anAddressHoldingItsShareIsRefusedAtOnceAndAnotherAddressStillWaits() throws {
        try data.write("", to: ".locks/keep")
        let held = (0..<4).map { place($0, for: "10.0.0.7") }
        defer { for fd in held { close(fd) } }
        let (inbox, anchor) = try inboxWithAnAnchor()
        let share = WaitShare(address: "10.0.0.7", places: 4)
        #expect(throws: WaitError.addressHoldsItsShare(share)) {
            _ = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30, share: share))
        }
        // A larger share, another address, or none counted: the wait takes a place.
        for other in [WaitShare(address: "10.0.0.7", places: 5), WaitShare(address: "10.0.0.8", places: 4), nil] {
            #expect(try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(1, share: other)).messages.isEmpty)
        }
        // Changes already there answer without a place, as for the box's total.
        #expect(try inbox.changes(after: nil, limit: 10, excludingSource: nil, waiting: limit(30, share: share)).messages.count == 1)
    }

    @Test func onlyPlacesStillHeldCountForTheirAddress() throws {
        try data.write("", to: ".locks/keep")
        // Three held for the address, and places it held once, whose processes ended.
        let held = (0..<3).map { place($0, for: "fe80::1") }
        let ended = (3..<9).map { place($0, for: "fe80::1", held: false) }
        // An address that begins with this one's text is another address.
        let longer = place(9, for: "fe80::10")
        defer { for fd in held + ended + [longer] { close(fd) } }
        let (inbox, anchor) = try inboxWithAnAnchor()
        let share = WaitShare(address: "fe80::1", places: 4)
        let key = self.key
        let root = data.path
        // The fourth place is free for it: it waits, and holds the place under its name while it does.
        let named = DispatchSemaphore(value: 0)
        later(0) {
            // The names of the places held, until the waiter's is among them.
            for _ in 0..<500 {
                let names = (0..<Self.places).compactMap { n -> String? in
                    let fd = open(root + "/.locks/waiting.\(n).lock", O_RDWR)
                    defer { close(fd) }
                    guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) != 0 else { return nil }
                    var buffer = [UInt8](repeating: 0, count: 64)
                    return String(decoding: buffer[0..<max(0, pread(fd, &buffer, 64, 0))], as: UTF8.self)
                }
                if names.sorted() == ["fe80::1", "fe80::1", "fe80::1", "fe80::1", "fe80::10"] {
                    named.signal()
                    break
                }
                usleep(20_000)
            }
            var settings = InboxSettings()
            settings.minimumFreeBytes = 0
            try Self.put(InboxStore(root: root, key: key, settings: settings), "b")
        }
        let page = try inbox.changes(after: anchor, limit: 10, excludingSource: nil, waiting: limit(30, share: share))
        #expect(page.messages.map(\.envelope.id.rawValue) == ["b"])
        #expect(named.wait(timeout: .now() + 5) == .success)
    }

    @Test func waitsStartedTogetherFromOneAddressGetExactlyItsShare() throws {
        let (inbox, anchor) = try inboxWithAnAnchor()
        let share = WaitShare(address: "192.168.1.50", places: 4)
        let outcomes = Outcomes()
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for _ in 0..<10 {
            DispatchQueue.global().async(group: group) {
                start.wait()
                do {
                    let page = try inbox.changes(after: anchor, limit: 10, excludingSource: nil,
                                                 waiting: WaitLimit(seconds: 30, places: Self.places, share: share))
                    outcomes.add(page.messages.map(\.envelope.id.rawValue).joined())
                } catch {
                    outcomes.add("\(error)")
                }
            }
        }
        for _ in 0..<10 { start.signal() }
        // The refused answer at once; the four held wait for the write.
        let refused = "\(WaitError.addressHoldsItsShare(share))"
        let deadline = Sys.monotonicNanos() + 20_000_000_000
        while outcomes.all.count < 6 && Sys.monotonicNanos() < deadline { usleep(20_000) }
        #expect(outcomes.all == Array(repeating: refused, count: 6))
        try Self.put(inbox, "b")
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(outcomes.all == Array(repeating: refused, count: 6) + Array(repeating: "b", count: 4))
    }

    /// What concurrent waits ended with, in the order they ended.
    final class Outcomes: Sendable {
        private let list = Mutex<[String]>([])
        func add(_ outcome: String) { list.withLock { $0.append(outcome) } }
        var all: [String] { list.withLock { $0 } }
    }
}
