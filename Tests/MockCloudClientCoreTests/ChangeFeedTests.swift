import MockCloudClient
import MockCloudClientTestSupport
import MockCloudPortableTestSupport
import MockCloudWire
import Testing

@Suite struct ChangeFeedTests {
    @Test func a410RestartsWithoutAnchorOrExcludeSourceAndHandsNothingOutTwice() async throws {
        let server = FakeServer { request, n in
            switch n {
            case 1: return FakeServer.json(200, page([envelope("a", version: 1, seq: 5)], anchor: "aa.0.5", hasMore: true))
            case 2: return FakeServer.json(410, #"{"error": "restart without an anchor"}"#)
            default:
                return FakeServer.json(200, page([envelope("a", version: 1, seq: 5), envelope("b", version: 2, seq: 9)],
                                                 anchor: "bb.0.9", hasMore: false))
            }
        }
        var pages: [ChangePage] = []
        for try await page in client(server).changes(since: Anchor("aa.0.1")) { pages.append(page) }
        let targets = await server.requests.map(\.target)
        #expect(targets == ["/inbox?limit=1000&anchor=aa.0.1&exclude-source=phone-1",
                            "/inbox?limit=1000&anchor=aa.0.5&exclude-source=phone-1",
                            "/inbox?limit=1000"])
        #expect(pages.count == 2)
        #expect(pages[1].startsResync && pages[1].isFullRead && !pages[0].isFullRead)
        #expect(pages[1].messages.map(\.id.rawValue) == ["b"])  // "a" at seq 5 was handed out already
        #expect(pages[1].liveIDs == [id("a"), id("b")])
        #expect(pages[1].anchor == Anchor("bb.0.9"))
    }

    @Test func theSameIdAtANewSeqIsHandedOutAgainAndADeletionLeavesTheLiveSet() async throws {
        let server = FakeServer { _, n in
            n == 1
                ? FakeServer.json(200, page([envelope("a", version: 1, seq: 1)], anchor: "aa.0.1", hasMore: true))
                : FakeServer.json(200, page([envelope("a", version: 1, seq: 4)], deleted: [("b", 3)], anchor: "aa.0.4", hasMore: false))
        }
        var pages: [ChangePage] = []
        for try await page in client(server, device: nil).changes(since: nil) { pages.append(page) }
        #expect(pages.map { $0.messages.map(\.seq) } == [[1], [4]])
        #expect(pages[1].liveIDs == [id("a")] && pages[1].deleted.map(\.id) == [id("b")])
        #expect(await server.requests.first?.target == "/inbox?limit=1000")
    }

    @Test func aFileAnchorStoreKeepsTheAnchorAndForgetsIt() throws {
        let directory = try TemporaryDirectory()
        let store = FileAnchorStore(directory: directory.path)
        #expect(try store.load() == nil)
        try store.save(Anchor("9f2c4e1a7b3d5c60.0.21"))
        #expect(try store.load() == Anchor("9f2c4e1a7b3d5c60.0.21"))
        try store.save(nil)
        #expect(try store.load() == nil)
    }
}
