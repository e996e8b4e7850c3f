import Foundation
import MockCloudClient
import MockCloudClientTestSupport
@testable import MockCloudSync
import MockCloudTestSupport
import MockCloudWire
import Testing

/// `mockcloud-sync push DIR --watch` against a scripted server: the first
/// round sends what the record lacks, each file written afterwards goes as
/// soon as it is whole, a box that stops answering is waited out without a
/// restart, and cancelling (SIGTERM) ends it with exit 0.
@Suite struct PushWatchTests {
    /// Whether the scripted box answers.
    final class Reachable: @unchecked Sendable {
        private let lock = NSLock()
        private var up = true
        /// Requests refused while it was away.
        private(set) var refused = 0
        func set(_ value: Bool) { lock.withLock { up = value } }
        func answers() -> Bool {
            lock.withLock {
                if !up { refused += 1 }
                return up
            }
        }
    }

    /// A scripted box: bulk items stored (201) or deleted (204), feed reads
    /// at the end of the feed.
    static func box(_ reachable: Reachable = Reachable()) -> FakeServer {
        FakeServer { request, _ in
            guard reachable.answers() else { return .failure(.connection("Connection refused")) }
            guard request.method == "POST" else { return FakeServer.json(200, page([], anchor: "aa.0.9", hasMore: false)) }
            let rows = FakeServer.items(request).enumerated().map { index, item in
                #"{"id": "\#(item["id"]?.stringValue ?? "")", "status": \#(item["deleted"] == nil ? 201 : 204), "seq": \#(index + 1)}"#
            }
            return FakeServer.json(200, #"{"results": [\#(rows.joined(separator: ", "))]}"#)
        }
    }

    /// The watch in a task of its own, over `path`; two attempts a request,
    /// waits of a millisecond instead of the backoff's (recorded in `waits`).
    static func watch(_ server: FakeServer, _ path: String, delete: Bool = false, waits: Waits = Waits()) -> Task<Int32, any Error> {
        let client = BoxClient(
            configuration: ClientConfiguration(
                userKey: UserKey("u1")!, deviceID: DeviceID("mirror-1"),
                retry: RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(100), maxDelay: .seconds(2), maxRetryAfter: .seconds(60))
            ).recording(waits, actually: .milliseconds(1)),
            transport: server)
        return Task {
            var output = Output(json: true)
            return try await PushWatch(client: client, directory: path, deleteMissing: delete).run(&output)
        }
    }

    /// The ids of each bulk request the box got, in order.
    static func bulks(_ server: FakeServer) async -> [[String]] {
        await server.requests.filter { $0.method == "POST" }.map { FakeServer.items($0).compactMap { $0["id"]?.stringValue } }
    }

    /// Each deletion the box got.
    static func deletions(_ server: FakeServer) async -> [String] {
        await server.requests.filter { $0.method == "POST" }.flatMap(FakeServer.items)
            .filter { $0["deleted"] != nil }.compactMap { $0["id"]?.stringValue }
    }

    /// True once `condition` holds; false after two minutes (a bound for a
    /// stuck watch, not a speed: a full `swift test` on two cores can keep
    /// the concurrency pool's threads busy for tens of seconds).
    static func eventually(_ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// The ack log's live acknowledgements, by id.
    static func acks(_ directory: TemporaryDirectory) throws -> [String: AckLog.Ack] {
        Dictionary(uniqueKeysWithValues: try AckLog(directory: directory.path, name: Push.stateName).acks.dictionary.map { ($0.key.rawValue, $0.value) })
    }

    /// The version of a stored acknowledgement.
    static func version(_ ack: AckLog.Ack?) -> Int64? {
        guard case .stored(let version, _)? = ack else { return nil }
        return version
    }

    /// Writes `name` as a scanner does: a hidden part file, renamed in.
    static func renameIn(_ text: String, as name: String, in directory: TemporaryDirectory) throws {
        try directory.write(text, to: "." + name + ".part")
        try FileManager.default.moveItem(atPath: directory.file("." + name + ".part"), toPath: directory.file(name))
    }

    @Test func theFirstRoundSendsWhatTheRecordLacksThenEachFileAsItArrives() async throws {
        let directory = try TemporaryDirectory()
        try directory.write(#"{"syncVersion": 1}"#, to: "before.json")
        let server = Self.box()
        let task = Self.watch(server, directory.path)
        #expect(await Self.eventually { await Self.bulks(server) == [["before"]] })
        try Self.renameIn(#"{"syncVersion": 1, "n": 1}"#, as: "after.json", in: directory)
        #expect(await Self.eventually { await Self.bulks(server).last == ["after"] })
        try directory.write(#"{"syncVersion": 2, "n": 1}"#, to: "after.json")
        #expect(await Self.eventually { await Self.bulks(server).count == 3 })
        task.cancel()
        #expect(try await task.value == 0)
        #expect(await Self.bulks(server) == [["before"], ["after"], ["after"]])
        let acks = try Self.acks(directory)
        #expect(acks.count == 2 && Self.version(acks["after"]) == 2 && Self.version(acks["before"]) == 1)
    }

    @Test func hiddenAndTemporaryFilesAreNeverSent() async throws {
        let directory = try TemporaryDirectory()
        let server = Self.box()
        let task = Self.watch(server, directory.path)
        #expect(await Self.eventually { await server.requests.count >= 1 })  // the first round renewed the anchor
        for name in [".scan.json.swp", "scan.json.tmp", ".scan.json", "notes.txt"] {
            try directory.write("{}", to: name)
        }
        try Self.renameIn("{}", as: "scan.json", in: directory)
        #expect(await Self.eventually { await Self.bulks(server) == [["scan"]] })
        task.cancel()
        #expect(try await task.value == 0)
        #expect(await Self.bulks(server) == [["scan"]])
    }

    @Test func withDeleteARemovedFileBecomesADeletion() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("{}", to: "kept.json")
        try directory.write("{}", to: "dropped.json")
        let server = Self.box()
        let task = Self.watch(server, directory.path, delete: true)
        #expect(await Self.eventually { await Self.bulks(server).count == 1 })
        try FileManager.default.removeItem(atPath: directory.file("dropped.json"))
        #expect(await Self.eventually { await Self.deletions(server) == ["dropped"] })
        task.cancel()
        #expect(try await task.value == 0)
        let acks = try Self.acks(directory)
        #expect(Self.version(acks["kept"]) == 0 && acks["dropped"] == .deleted)
    }

    @Test func aBoxThatStopsAnsweringIsWaitedOutAndGetsWhatWasWrittenMeanwhile() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("{}", to: "first.json")
        let reachable = Reachable()
        let server = Self.box(reachable)
        let waits = Waits()
        let task = Self.watch(server, directory.path, waits: waits)
        #expect(await Self.eventually { await Self.bulks(server) == [["first"]] })
        reachable.set(false)
        try Self.renameIn("{}", as: "away-1.json", in: directory)
        try Self.renameIn("{}", as: "away-2.json", in: directory)
        // Several rounds fail after every retry (two attempts each).
        #expect(await Self.eventually { reachable.refused >= 8 })
        reachable.set(true)
        #expect(await Self.eventually { (try? Self.acks(directory).count) == 3 })
        task.cancel()
        #expect(try await task.value == 0)
        #expect(await Self.bulks(server).last == ["away-1", "away-2"])
        // Between rounds it waited as the retry policy says: capped at 2 s.
        #expect(waits.seconds.contains { $0 > 0.1 } && waits.seconds.allSatisfy { $0 <= 2 })
    }

    @Test func theFolderRemovedEndsTheWatchWithAnError() async throws {
        let parent = try TemporaryDirectory()
        try parent.write("{}", to: "in/a.json")
        let server = Self.box()
        let task = Self.watch(server, parent.file("in"))
        #expect(await Self.eventually { await Self.bulks(server).count == 1 })
        try FileManager.default.moveItem(atPath: parent.file("in"), toPath: parent.file("elsewhere"))
        await #expect(throws: ClientError.local("the watched folder \(parent.file("in")) is gone (it was moved or renamed): "
            + "push --watch stops; make the folder again (its record went with it: every file is sent again) and start it again")) {
            try await task.value
        }
    }

    @Test func aMissingFolderIsRefusedBeforeAnythingIsSent() async throws {
        let parent = try TemporaryDirectory()
        let server = Self.box()
        await #expect(throws: ClientError.local("cannot watch the folder \(parent.file("none")): No such file or directory")) {
            try await Self.watch(server, parent.file("none")).value
        }
        #expect(await server.requests.isEmpty)
    }
}
