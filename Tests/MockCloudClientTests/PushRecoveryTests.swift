import Foundation
import MockCloudClient
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

    @Test func whatHappenedIsSaid() {
        #expect(Recovery.reread.note.contains("read the feed again, nothing sent again"))
        #expect(Recovery.resent(.replaced).note.contains("restored from a backup or rebuilt: everything sent again"))
        #expect(Recovery.resent(.ahead).note.contains("lost writes it had acknowledged"))
        #expect(Recovery.resent(nil).note.contains("cannot answer from the last push's anchor: everything sent again"))
        #expect(Recovery.none.note.isEmpty && !Recovery.reread.resent && Recovery.reread.reason == .compacted)
    }
}
