import Foundation
import MockCloudClient
import MockCloudClientTestSupport
@testable import MockCloudSync
import MockCloudTestSupport
import MockCloudWire
import Testing

/// `mockcloud-sync push` when the anchor it kept from its last run gets
/// 410: routine compaction reads the feed again and sends nothing; a
/// replaced inbox (or a server that does not say why) gets everything again.
@Suite struct PushRecoveryTests {
    /// A folder of two messages, pushed once: the record holds both, the
    /// anchor is `aa.0.2`.
    func pushedFolder() async throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        for name in ["a", "b"] { try Data(#"{"syncVersion": 1, "n": "\#(name)"}"#.utf8).write(to: URL(fileURLWithPath: directory.path + "/\(name).json")) }
        let server = FakeServer { request, _ in
            request.method == "POST" ? FakeServer.storeAll(request) : FakeServer.json(200, page([], anchor: "aa.0.2", hasMore: false))
        }
        var output = Output(json: true)
        #expect(try await Push(client: client(server), directory: directory.path, deleteMissing: false).run(&output) == 0)
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == Anchor("aa.0.2"))
        return directory
    }

    /// The second push, the kept anchor answered with `gone`.
    func pushAgain(_ directory: TemporaryDirectory, gone: String) async throws -> (status: Int32, requests: [TransportRequest]) {
        let server = FakeServer { request, _ in
            if request.method == "POST" { return FakeServer.storeAll(request) }
            if request.target.contains("anchor=aa.0.2") { return FakeServer.json(410, gone) }
            return FakeServer.json(200, page([envelope("a", version: 1, seq: 7)], anchor: "aa.1.9", hasMore: false))
        }
        var output = Output(json: true)
        let status = try await Push(client: client(server), directory: directory.path, deleteMissing: false).run(&output)
        return (status, await server.requests)
    }

    @Test func afterCompactionThePushReadsTheFeedAgainAndSendsNothing() async throws {
        let directory = try await pushedFolder()
        let record = try AckLog(directory: directory.path, name: Push.stateName).acks
        let (status, requests) = try await pushAgain(directory, gone: #"{"error": "anchor is older than the deletions this inbox still keeps; restart without an anchor", "reason": "compacted"}"#)
        #expect(status == 0)
        #expect(requests.map(\.target) == ["/inbox?limit=1000&anchor=aa.0.2&exclude-source=phone-1",
                                           "/inbox?limit=1000&exclude-source=phone-1"])
        #expect(try AckLog(directory: directory.path, name: Push.stateName).acks == record)
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == Anchor("aa.1.9"))
    }

    @Test(arguments: [
        #"{"error": "anchor belongs to an inbox that no longer exists; restart without an anchor", "reason": "replaced"}"#,
        #"{"error": "anchor is newer than anything stored; restart without an anchor", "reason": "ahead"}"#,
        #"{"error": "restart without an anchor"}"#,
        #"{"error": "restart without an anchor", "reason": "some-later-reason"}"#,
    ])
    func afterARestoreThePushSendsEverythingAgain(gone: String) async throws {
        let directory = try await pushedFolder()
        let (status, requests) = try await pushAgain(directory, gone: gone)
        #expect(status == 0)
        let bulks = requests.filter { $0.method == "POST" }
        #expect(bulks.count == 1 && FakeServer.items(bulks[0]).compactMap { $0["id"]?.stringValue } == ["a", "b"])
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == Anchor("aa.1.9"))
    }

    @Test func anInboxReplacedDuringThePushLeavesNothingRecordedAndExits1() async throws {
        let directory = try await pushedFolder()
        try Data(#"{"syncVersion": 2}"#.utf8).write(to: URL(fileURLWithPath: directory.path + "/a.json"))
        let server = FakeServer { request, n in
            if request.method == "POST" { return FakeServer.storeAll(request) }
            if n == 1 { return FakeServer.json(200, page([], anchor: "aa.0.2", hasMore: false)) }
            return FakeServer.json(410, #"{"error": "restart without an anchor", "reason": "replaced"}"#)
        }
        var output = Output(json: true)
        #expect(try await Push(client: client(server), directory: directory.path, deleteMissing: false).run(&output) == 1)
        #expect(try AckLog(directory: directory.path, name: Push.stateName).acks.isEmpty)
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == nil)
    }

    /// Items stored (201) or deleted (204), feed reads at `anchor` unless
    /// `gone` answers the kept anchor; `feedDown`: reads after the first fail.
    static func box(anchor: String = "aa.0.2", gone: String? = nil, feedDown: Bool = false) -> FakeServer {
        FakeServer { request, n in
            if request.method == "POST" {
                let rows = FakeServer.items(request).enumerated().map { index, item in
                    #"{"id": "\#(item["id"]?.stringValue ?? "")", "status": \#(item["deleted"] == nil ? 201 : 204), "seq": \#(index + 1)}"#
                }
                return FakeServer.json(200, #"{"results": [\#(rows.joined(separator: ", "))]}"#)
            }
            if feedDown && n > 1 { return .failure(.connection("Connection refused")) }  // after the first read
            if let gone, request.target.contains("anchor=aa.0.2") { return FakeServer.json(410, gone) }
            return FakeServer.json(200, page([], anchor: anchor, hasMore: false))
        }
    }

    static func push(_ directory: TemporaryDirectory, _ server: FakeServer, delete: Bool = false) async throws -> Int32 {
        var output = Output(json: true)
        return try await Push(client: client(server, attempts: 1), directory: directory.path, deleteMissing: delete).run(&output)
    }

    /// Stopped after an acknowledgement and before the anchor's renewal,
    /// the push's next run renews it: a box that later goes back to a
    /// backup from before those writes is then told by its 410.
    @Test func anAnchorLeftStaleByAStopIsRenewedByTheNextRun() async throws {
        let directory = try await pushedFolder()
        try Data(#"{"syncVersion": 1, "n": "c"}"#.utf8).write(to: URL(fileURLWithPath: directory.path + "/c.json"))
        await #expect(throws: ClientError.self) { try await Self.push(directory, Self.box(feedDown: true)) }
        #expect(try AckLog(directory: directory.path, name: Push.stateName).acks.count == 3)
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == Anchor("aa.0.2"))
        let server = Self.box(anchor: "aa.0.3")
        #expect(try await Self.push(directory, server) == 0)
        #expect(await server.requests.filter { $0.method == "POST" }.isEmpty)
        #expect(try FileAnchorStore(directory: directory.path, name: Push.anchorName).load() == Anchor("aa.0.3"))
    }

    /// With `--delete`, a deletion made after the backup the box was
    /// restored from is made again, with every file sent again.
    @Test func afterARestoreDeletionsAreMadeAgain() async throws {
        let directory = try await pushedFolder()
        try FileManager.default.removeItem(atPath: directory.path + "/b.json")
        #expect(try await Self.push(directory, Self.box(), delete: true) == 0)
        #expect(try AckLog(directory: directory.path, name: Push.stateName).acks[MessageID("b")!] == .deleted)
        let server = Self.box(anchor: "aa.1.9", gone: #"{"error": "restart without an anchor", "reason": "replaced"}"#)
        #expect(try await Self.push(directory, server, delete: true) == 0)
        let bulks = await server.requests.filter { $0.method == "POST" }
        #expect(bulks.count == 1)
        #expect(bulks.first.map(FakeServer.items)?.map { "\($0["id"]?.stringValue ?? "")\($0["deleted"] == nil ? "" : " deleted")" }
            == ["a", "b deleted"])
        // Without --delete, the deletion is kept to be made by a later push --delete.
        let kept = try await pushedFolder()
        try FileManager.default.removeItem(atPath: kept.path + "/b.json")
        #expect(try await Self.push(kept, Self.box(), delete: true) == 0)
        #expect(try await Self.push(kept, server) == 0)
        #expect(try AckLog(directory: kept.path, name: Push.stateName).acks[MessageID("b")!] == .restored)
    }

    @Test func whatHappenedIsSaid() {
        #expect(Recovery.reread.note.contains("read the feed again, nothing sent again"))
        #expect(Recovery.resent(.replaced).note.contains("restored from a backup or rebuilt: everything sent again"))
        #expect(Recovery.resent(.ahead).note.contains("lost writes it had acknowledged"))
        #expect(Recovery.resent(nil).note.contains("cannot answer from the last push's anchor: everything sent again"))
        #expect(Recovery.none.note.isEmpty && !Recovery.reread.resent && Recovery.reread.reason == .compacted)
    }
}
