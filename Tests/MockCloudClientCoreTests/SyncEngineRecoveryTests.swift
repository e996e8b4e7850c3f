import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudClientTestSupport
import MockCloudPortableTestSupport
import Testing

/// The box restored from an older backup: the engine sends again what the
/// box acknowledged and no longer holds (docs/SYNC.md, "A box that lost
/// writes").
@Suite struct SyncEngineRecoveryTests {
    /// A box whose feed answers a read from an anchor with 410 and
    /// `reason` once `restored` is set, and a full read with `holds`.
    actor Restore {
        var restored = false
        func restore() { restored = true }
    }

    func box(_ restore: Restore, reason: String, holds: [String]) -> FakeBox {
        FakeBox(inbox: { request, _ in
            if await restore.restored {
                if request.target.contains("anchor=") { return FakeServer.json(410, #"{"error": "gone", "reason": "\#(reason)"}"#) }
                return FakeServer.json(200, page(holds, anchor: "bb.0.9", hasMore: false))
            }
            return FakeServer.json(200, page([], anchor: "aa.0.4", hasMore: false))
        })
    }

    /// Puts a v1, b v2, c v3 and deletes d, all acknowledged; then the box
    /// is restored to one that holds a v1, b v1 and d v1, and lacks c.
    func sentAfterARestore(reason: String) async throws -> [[String]] {
        let directory = try TemporaryDirectory()
        let restore = Restore()
        let holds = [envelope("a", version: 1, seq: 1), envelope("b", version: 1, seq: 2), envelope("d", version: 1, seq: 3)]
        let box = box(restore, reason: reason, holds: holds)
        let store = AppStore(anchor: nil)
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: store)
        try await engine.enqueue([
            .put(id("a"), version: 1, body: body(#"{"n": "a"}"#)), .put(id("b"), version: 2, body: body(#"{"n": "b"}"#)),
            .put(id("c"), version: 3, body: body(#"{"n": "c"}"#)), .delete(id("d")),
        ])
        #expect(try await engine.syncUntilIdle(within: .seconds(60)).isEmpty)
        #expect(await box.sentItems == [["a v1", "b v2", "c v3", "d deleted"]])
        #expect(await store.anchor == Anchor("aa.0.4"))
        await restore.restore()
        #expect(try await engine.syncUntilIdle(within: .seconds(60)).isEmpty)
        #expect(await store.anchor == Anchor("bb.0.9"))
        await engine.close()
        return await box.sentItems
    }

    @Test(arguments: ["replaced", "ahead"])
    func afterABoxLostWritesWhatItLacksIsSentAgainAtItsVersion(reason: String) async throws {
        let sent = try await sentAfterARestore(reason: reason)
        #expect(sent.count == 2)
        #expect(sent.last == ["b v2", "c v3", "d deleted"])
    }

    @Test func aCompacted410SendsNothingAgain() async throws {
        #expect(try await sentAfterARestore(reason: "compacted").count == 1)
    }

    @Test func theBodiesSentAgainAreTheOnesAcknowledged() async throws {
        let directory = try TemporaryDirectory()
        let restore = Restore()
        let box = box(restore, reason: "replaced", holds: [])
        let engine = try SyncEngine(
            client: engineClient(box), stateDirectory: URL(fileURLWithPath: directory.path), store: AppStore(anchor: nil))
        try await engine.enqueue([.put(id("c"), version: 3, body: body(#"{"n": "c", "v": 3}"#))])
        _ = try await engine.syncUntilIdle(within: .seconds(60))
        await restore.restore()
        _ = try await engine.syncUntilIdle(within: .seconds(60))
        await engine.close()
        let bulks = await box.requests.filter { $0.target == "/inbox:bulk" }
        #expect(bulks.count == 2)
        #expect(bulks.map { FakeServer.items($0).map { $0["body"] } } == [[body(#"{"n": "c", "v": 3}"#).value], [body(#"{"n": "c", "v": 3}"#).value]])
    }

    @Test func aSentLogWhoseLastRecordACrashCutShortStillRecoversTheRest() async throws {
        let directory = try TemporaryDirectory()
        let restore = Restore()
        let box = box(restore, reason: "ahead", holds: [])
        let url = URL(fileURLWithPath: directory.path)
        let first = try SyncEngine(client: engineClient(box), stateDirectory: url, store: AppStore(anchor: nil))
        try await first.enqueue([.put(id("c"), version: 3, body: body("{}"))])
        _ = try await first.syncUntilIdle(within: .seconds(60))
        await first.close()
        // A record cut short by a crash: no line end, no matching checksum.
        let sent = try FileHandle(forWritingTo: url.appendingPathComponent("sent"))
        try sent.seekToEnd()
        try sent.write(contentsOf: Data(#"0123456789abcdef {"enqueue": [{"n": 9, "id": "e", "vers"#.utf8))
        try sent.close()
        let store = AppStore(anchor: nil)
        let second = try SyncEngine(client: engineClient(box), stateDirectory: url, store: store)
        try await second.enqueue([.put(id("e"), version: 5, body: body("{}"))])
        _ = try await second.syncUntilIdle(within: .seconds(60))
        await restore.restore()
        _ = try await second.syncUntilIdle(within: .seconds(60))
        await second.close()
        #expect(await box.sentItems == [["c v3"], ["e v5"], ["c v3", "e v5"]])
    }

    @Test func theSentLogKeepsOneVersionPerIdAndStaysBounded() async throws {
        let directory = try TemporaryDirectory()
        let restore = Restore()
        let box = box(restore, reason: "replaced", holds: [envelope("a", version: 100, seq: 1)])
        let url = URL(fileURLWithPath: directory.path)
        let engine = try SyncEngine(client: engineClient(box), stateDirectory: url, store: AppStore(anchor: nil))
        let padding = String(repeating: "x", count: 2000)
        for version in 1...200 {
            try await engine.enqueue([.put(id("a"), version: Int64(version), body: body(#"{"pad": "\#(padding)"}"#))])
            _ = try await engine.syncUntilIdle(within: .seconds(60))
        }
        // 200 acknowledgements of 2 KB: about 400 KB unless compacted.
        let size = try FileManager.default.attributesOfItem(atPath: url.appendingPathComponent("sent").path)[.size] as! Int
        #expect(size < 80 << 10)
        await restore.restore()
        _ = try await engine.syncUntilIdle(within: .seconds(60))
        await engine.close()
        // The box holds version 100 of 200: the newest is sent again, once.
        #expect(await box.sentItems.count == 201)
        #expect(await box.sentItems.last == ["a v200"])
    }
}
