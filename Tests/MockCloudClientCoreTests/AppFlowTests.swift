import MockCloudClient
import MockCloudClientTestSupport
import Testing

/// An app's store: what it holds and the anchor saved with it.
actor AppStore: ChangeApplier {
    var held: [MessageID: Int64] = [:]
    var anchor: Anchor?
    var applied: [(ids: [String], saved: Anchor?)] = []

    init(anchor: Anchor?, held: [MessageID: Int64] = [:]) {
        self.anchor = anchor
        self.held = held
    }

    func savedAnchor() async throws -> Anchor? { anchor }

    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {
        for message in changes.messages { held[message.id] = message.version }
        for deletion in changes.deleted { held[deletion.id] = nil }
        if let live = changes.liveIDs { held = held.filter { live.contains($0.key) } }
        if let anchor { self.anchor = anchor }
        applied.append((changes.messages.map(\.id.rawValue), anchor))
    }
}

@Suite struct AppFlowTests {
    @Test func aSyncAfterA410RebuildsTheStoreAndSavesTheAnchorOnlyAtTheEnd() async throws {
        let server = FakeServer { request, n in
            switch n {
            case 1: return FakeServer.json(410, #"{"error": "the anchor is too old"}"#)
            case 2: return FakeServer.json(200, page([envelope("a", version: 1, seq: 1)], anchor: "aa.1.1", hasMore: true))
            default: return FakeServer.json(200, page([envelope("b", version: 2, seq: 2)], anchor: "aa.1.2", hasMore: false))
            }
        }
        let store = AppStore(anchor: Anchor("aa.0.9"), held: [id("stale"): 1, id("a"): 0])
        let summary = try await client(server).sync(into: store)
        #expect(summary.resynced && summary.pages == 2 && summary.messages == 2 && summary.anchor == Anchor("aa.1.2"))
        #expect(await store.held == [id("a"): 1, id("b"): 2])  // "stale" was not in the full read
        #expect(await store.applied.map(\.saved) == [nil, Anchor("aa.1.2")])
        #expect(await server.requests.map(\.target).last == "/inbox?limit=1000&anchor=aa.1.1")  // no exclude-source
    }

    @Test func healthKitSamplesAreUploadedUnderTheirSyncIdentifierAndVersion() throws {
        let item = try UploadItem.sample(syncIdentifier: "nm-20261201T0700-weight", syncVersion: 3, body: body(#"{"kg": 70.1}"#))
        #expect(item == .put(id("nm-20261201T0700-weight"), version: 3, body: body(#"{"kg": 70.1}"#)))
        #expect(try UploadItem.deletion(syncIdentifier: "nm-1-fat") == .delete(id("nm-1-fat")))
        #expect(throws: ClientError.self) { try UploadItem.sample(syncIdentifier: "nm 1/weight", syncVersion: 1, body: body("{}")) }
        #expect(throws: ClientError.self) { try UploadItem.sample(syncIdentifier: "nm-1", syncVersion: -1, body: body("{}")) }
    }
}
