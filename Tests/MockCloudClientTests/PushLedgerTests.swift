import Foundation
import MockCloudClient
import MockCloudClientTestSupport
@testable import MockCloudSync
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The push's one pass as a watch's round makes it: only the names
/// reported, a name whose file is gone a deletion when `--delete` asks and
/// the box acknowledged it, and lost events widening a round to every file.
@Suite struct PushLedgerTests {
    /// A folder whose record says the box acknowledged `kept` and `gone`
    /// (`gone.json` since removed) at version 1.
    func folder() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write(#"{"syncVersion": 1}"#, to: "kept.json")
        try directory.write(#"{"syncVersion": 2}"#, to: "newer.json")
        let digest = try JSONText(validating: #"{"syncVersion": 1}"#).sha256
        try directory.write("gone 1 \(digest)\nkept 1 \(digest)\n", to: Push.stateName)
        return directory
    }

    func ledger(_ directory: TemporaryDirectory, delete: Bool) throws -> PushLedger {
        try PushLedger(client: client(FakeServer { _, _ in .failure(.connection("no box in this test")) }),
                       directory: directory.path, deleteMissing: delete)
    }

    @Test func aSecondPushOnTheFolderIsRefusedAtOnceUntilTheFirstEnds() throws {
        let directory = try folder()
        var first: PushLedger? = try ledger(directory, delete: false)
        #expect(throws: FolderBusy(path: directory.path)) { try ledger(directory, delete: true) }
        #expect(FolderBusy(path: directory.path).description.contains("another push is running on the folder \(directory.path) "))
        #expect(first != nil)
        first = nil
        #expect(throws: Never.self) { try ledger(directory, delete: false) }
    }

    @Test func aRoundLooksAtTheReportedNamesOnly() throws {
        let directory = try folder()
        let round = try ledger(directory, delete: true).plan(.names(["newer.json", "kept.json"]))
        #expect(round.items.map(\.id.rawValue) == ["newer"] && round.unchanged == 1 && round.files == 2)
    }

    @Test(arguments: [true, false])
    func aReportedFileThatIsGoneIsADeletionOnlyWithDelete(delete: Bool) throws {
        let directory = try folder()
        let round = try ledger(directory, delete: delete).plan(.names(["gone.json", "never-sent.json"]))
        #expect(round.items == (delete ? [.delete(MessageID("gone")!)] : []))
        #expect(round.files == 0 && round.tally.problems.isEmpty)
    }

    @Test func everythingIsEveryFileAndEveryAcknowledgedIdWithout() throws {
        let directory = try folder()
        let round = try ledger(directory, delete: true).plan(.everything)
        #expect(round.items.map(\.id.rawValue) == ["newer", "gone"] && round.unchanged == 1)
    }

    @Test func aFileThatIsNoMessageIsAProblemNotAnItem() throws {
        let directory = try folder()
        try directory.write(#"{"syncVersion": 1, "weight""#, to: "half.json")
        try directory.write("{}", to: "bad name.json")
        let round = try ledger(directory, delete: false).plan(.names(["half.json", "bad name.json"]))
        #expect(round.items.isEmpty && round.tally.problems.count == 2)
        #expect(round.tally.problems[0].hasPrefix("bad name.json: the name is not a message id"))
        #expect(round.tally.problems[1].hasPrefix("half.json: "))
    }

    @Test func aTouchedFileThatDoesNotReadYetIsNoProblemButOneThatReadsIsSent() throws {
        let directory = try folder()
        try directory.write(#"{"syncVersion": 1, "weight""#, to: "opened.json")
        try directory.write(#"{"syncVersion": 3}"#, to: "linked.json")
        let scope = PushLedger.Scope(FolderChanges(names: ["opened.json": .touched, "linked.json": .touched, "kept.json": .touched]))
        let round = try ledger(directory, delete: false).plan(scope)
        #expect(round.items.map(\.id.rawValue) == ["linked"] && round.unchanged == 1 && round.tally.problems.isEmpty)
    }

    @Test func aNameReportedWholeByEitherScopeIsLookedAtAsWhole() {
        var scope = PushLedger.Scope(FolderChanges(names: ["a.json": .touched, "b.json": .touched, "c.json": .complete]))
        scope.merge(PushLedger.Scope(FolderChanges(names: ["a.json": .complete, "b.json": .touched, "d.json": .touched])))
        #expect(scope == .names(["a.json", "b.json", "c.json", "d.json"], quiet: ["b.json", "d.json"]))
    }

    /// A pass reads its files a chunk at a time (what the requests in
    /// flight carry), not all before the first request: a file removed
    /// while the first request is in flight is not sent.
    @Test func aPassReadsItsFilesAChunkAtATime() async throws {
        let directory = try TemporaryDirectory()
        for i in 0..<50 { try directory.write(#"{"syncVersion": 1}"#, to: "s-\(i + 10).json") }
        let last = directory.file("s-59.json")
        let server = FakeServer { request, n in
            if request.method == "POST", n == 1 { try? FileManager.default.removeItem(atPath: last) }
            return request.method == "POST" ? FakeServer.storeAll(request) : FakeServer.json(200, page([], anchor: "aa.0.2", hasMore: false))
        }
        let client = BoxClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, limits: BulkLimits(maxItems: 10, maxRequestBytes: 1 << 20, maxItemBodyBytes: 1 << 10),
                uploadsInFlight: 1),
            transport: server)
        var ledger = try PushLedger(client: client, directory: directory.path, deleteMissing: false)
        let round = try await ledger.pass(.everything) { _ in }
        let sent = await server.requests.filter { $0.method == "POST" }.map { FakeServer.items($0).count }
        #expect(sent == [10, 10, 10, 10, 9] && round.tally.stored == 49 && round.files == 49)
    }

    @Test func lostEventsWidenARoundToEveryFile() {
        var scope = PushLedger.Scope(FolderChanges(names: ["a.json": .complete]))
        #expect(scope == .names(["a.json"]))
        scope.merge(.names(["b.json"]))
        #expect(scope == .names(["a.json", "b.json"]))
        scope.merge(PushLedger.Scope(FolderChanges(overflowed: true)))
        #expect(scope == .everything)
        scope.merge(.names(["c.json"]))
        #expect(scope == .everything)
    }
}
