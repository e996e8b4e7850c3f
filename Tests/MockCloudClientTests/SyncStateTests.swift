import Foundation
import MockCloudClient
import Testing

// Foundation and the library only (no Glibc, no system layer): these run
// wherever the library builds, a Mac included.

/// A box that is never reached: these engines are opened, never run.
private struct NoBox: HTTPTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw TransportError.connection("no box in this test")
    }
}

/// A store that holds nothing.
private struct NoStore: ChangeApplier {
    func savedAnchor() async throws -> Anchor? { nil }
    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {}
}

/// A state directory of its own, removed when the test ends.
private final class StateFolder {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("sync-state-\(UUID().uuidString)")
    var journal: URL { url.appendingPathComponent("journal") }

    func open() throws -> SyncEngine {
        let client = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!), transport: NoBox())
        return try SyncEngine(client: client, stateDirectory: url, store: NoStore())
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

private func item(_ id: String, _ version: Int64, _ body: String) -> UploadItem {
    .put(MessageID(id)!, version: version, body: try! JSONText(validating: body))
}

@Suite struct SyncStateTests {
    /// A power loss during the last `enqueue` (which never returned) leaves
    /// its record cut short, or whole up to its line end but with a hole of
    /// zeros where a page never reached the disk. Either way the record was
    /// never committed: the engine opens with every change before it.
    @Test func aLastRecordCutOrHoledAnywhereIsDroppedAndEveryCommittedChangeKept() async throws {
        let folder = StateFolder()
        let committed: SyncEngine.Pending
        do {
            let engine = try folder.open()
            try await engine.enqueue([item("a", 1, #"{"kg": 70.1}"#), item("b", 2, #"{"kg": 70.2}"#)])
            try await engine.editSettings(try JSONText(validating: #"{"unitSystem": "imperial"}"#), at: Date(timeIntervalSince1970: 1_779_098_460))
            try await engine.enqueue([.delete(MessageID("b")!)])
            committed = try await engine.pending
            try await engine.enqueue([item("c", 3, #"{"note": "the record a power loss cuts"}"#), item("a", 4, #"{"kg": 70.4}"#)])
        }
        let whole = try [UInt8](Data(contentsOf: folder.journal))
        let ends = whole.indices.filter { whole[$0] == UInt8(ascii: "\n") }
        let before = Array(whole[...ends[ends.count - 2]]), last = Array(whole[(ends[ends.count - 2] + 1)...])
        #expect(last.last == UInt8(ascii: "\n") && committed.uploads.count == 2)

        var damaged: [(String, [UInt8])] = []
        for cut in 0..<last.count { damaged.append(("cut after \(cut) bytes", Array(last[..<cut]))) }
        for start in 0..<(last.count - 1) {
            var holed = last
            for k in start..<(last.count - 1) { holed[k] = 0 }
            damaged.append(("a hole from byte \(start) to the line end", holed))
            var page = last
            page[start] = 0
            damaged.append(("a zero at byte \(start)", page))
        }
        for (what, tail) in damaged {
            try Data(before + tail).write(to: folder.journal)
            let engine = try folder.open()
            let pending = try await engine.pending
            #expect(pending == committed, "\(what)")
            let rewritten = try [UInt8](Data(contentsOf: folder.journal))
            #expect(rewritten.last == UInt8(ascii: "\n") && !rewritten.contains(0), "\(what): the journal is rewritten without it")
        }
    }

    /// While the box is away the journal grows by a record per call; it is
    /// compacted as it goes, not only after an acknowledgement.
    @Test func theJournalStaysSmallWhileOneIdIsEnqueuedOverAndOverWithTheBoxAway() async throws {
        let folder = StateFolder()
        let engine = try folder.open()
        let padding = String(repeating: "x", count: 300)
        var largest = 0
        for version in 1...3000 {
            try await engine.enqueue([item("s-1", Int64(version), #"{"v": \#(version), "pad": "\#(padding)"}"#)])
            largest = max(largest, try Data(contentsOf: folder.journal).count)
        }
        #expect(largest <= 64 << 10 + 1024, "the journal reached \(largest) bytes for a queue of one")
        #expect(try await engine.pending.uploads == [item("s-1", 3000, #"{"v": 3000, "pad": "\#(padding)"}"#)])
        #expect(await engine.pendingCount == 1)
    }

    /// A journal that is mostly history when the engine opens (written by an
    /// earlier version, or left by a crash before its compaction) is
    /// compacted at once; compaction files a crash left are removed.
    @Test func aJournalMostlyHistoryIsCompactedAtOpenAndLeftoversAreRemoved() async throws {
        let folder = StateFolder()
        do {
            let engine = try folder.open()
            try await engine.enqueue([item("a", 1, #"{"kg": 70.1}"#)])
        }
        var journal = try [UInt8](Data(contentsOf: folder.journal))
        let ends = journal.indices.filter { journal[$0] == UInt8(ascii: "\n") }
        let enqueued = Array(journal[(ends[0] + 1)...])  // the same record again and again: a valid, long history
        for _ in 0..<2000 { journal += enqueued }
        try Data(journal).write(to: folder.journal)
        let leftover = folder.url.appendingPathComponent(".journal.\(UUID().uuidString)")
        let other = folder.url.appendingPathComponent(".journal.notes")
        try Data("half a compaction".utf8).write(to: leftover)
        try Data("the app's".utf8).write(to: other)
        let engine = try folder.open()
        #expect(try await engine.pending.uploads == [item("a", 1, #"{"kg": 70.1}"#)])
        #expect(try Data(contentsOf: folder.journal).count < 1024)
        #expect(!FileManager.default.fileExists(atPath: leftover.path) && FileManager.default.fileExists(atPath: other.path))
    }

    /// The engine keeps the bodies in its journal, not in memory: what
    /// `pending` (and a send) gives is what the file holds now.
    @Test func queuedBodiesAreReadFromTheJournalNotHeldInMemory() async throws {
        let folder = StateFolder()
        let engine = try folder.open()
        try await engine.enqueue([item("a", 1, #"{"kg": 70.1}"#), .delete(MessageID("b")!)])
        var journal = try [UInt8](Data(contentsOf: folder.journal))
        let at = journal.firstRange(of: Array("70.1".utf8))!
        journal.replaceSubrange(at, with: Array("70.9".utf8))
        try Data(journal).write(to: folder.journal)
        #expect(try await engine.pending.uploads == [item("a", 1, #"{"kg": 70.9}"#), .delete(MessageID("b")!)])
    }

    /// What an app can tell apart: a directory in use, a damaged state, a
    /// state that cannot be written, each its own code naming the path.
    @Test func aStateThatCannotBeWrittenInUseOrDamagedEachHasItsCode() async throws {
        let folder = StateFolder()
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let file = folder.url.appendingPathComponent("a-file")
        try Data().write(to: file)
        let client = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!), transport: NoBox())
        let inside = file.appendingPathComponent("state")
        #expect {
            try SyncEngine(client: client, stateDirectory: inside, store: NoStore())
        } throws: { error in
            guard let error = error as? ClientError, error.code == .stateNotWritable else { return false }
            return error.detail.hasPrefix("cannot create the sync state directory \(inside.path): ")
                && error.detail.hasSuffix("; make its folder writable, or give the engine another directory")
        }
        let engine = try folder.open()
        #expect { try folder.open() } throws: { ($0 as? ClientError)?.code == .stateInUse }
        _ = engine
    }
}

