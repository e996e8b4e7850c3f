import Foundation
import MockCloudClient
import MockCloudClientTestSupport
@testable import MockCloudSync
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The push's ack log (`.mockcloud-sync-pushed`): a new scan appends a line
/// whatever the folder holds, the file is compacted now and then, a torn
/// last line (a crash while appending) is dropped, and the one-line-per-id
/// file of earlier releases reads as it is.
@Suite struct AckLogTests {
    static let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    static func inode(_ path: String) throws -> UInt64 {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
    }

    @Test func aNewScanWithTwentyThousandAcknowledgedAppendsOneLine() async throws {
        let directory = try TemporaryDirectory()
        let body = #"{"syncVersion": 1}"#
        let digest = try JSONText(validating: body).sha256
        var record = ""
        for i in 0..<20_000 { record += "scan-\(i) 1 \(digest)\n" }
        try directory.write(record, to: Push.stateName)
        try directory.write(body, to: "new-scan.json")
        let path = directory.file(Push.stateName)
        let (inode, size) = (try Self.inode(path), record.utf8.count)
        let server = FakeServer { request, _ in
            request.method == "POST" ? FakeServer.storeAll(request) : FakeServer.json(200, page([], anchor: "aa.0.2", hasMore: false))
        }
        var ledger = try PushLedger(client: client(server), directory: directory.path, deleteMissing: false)
        var round = try ledger.plan(.names(["new-scan.json"]))
        try await ledger.send(&round) { _ in }
        #expect(round.tally.stored == 1)
        // What the scan wrote to the log: its line, in the same file.
        let line = "new-scan 1 \(digest)\n".utf8.count
        #expect(ledger.log.bytesWritten == line)
        #expect(try Self.inode(path) == inode)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == size + line)
        #expect(try AckLog(directory: directory.path, name: Push.stateName).acks.count == 20_001)
    }

    @Test func theLogIsCompactedOnceItHoldsMoreThanTwiceItsLiveLines() throws {
        let directory = try TemporaryDirectory()
        let log = try AckLog(directory: directory.path, name: "log")
        let id = MessageID("a")!
        for version in 0..<1_200 { try log.record([(id, .stored(version: Int64(version), digest: Digest(hex: Self.digest)!))]) }
        let lines = try #require(directory.text(of: "log")).split(separator: "\n")
        #expect(lines.count < 1_003)
        #expect(try AckLog(directory: directory.path, name: "log").acks == [id: .stored(version: 1_199, digest: Digest(hex: Self.digest)!)])
    }

    @Test(arguments: [
        "b 2 \(digest)",  // cut before its line end
        "b 2 \(digest.prefix(30))",  // cut inside it
        "\0\0\0\0\0\0\0\0\n",  // a hole of zeros before its line end
        "b 2 \0\0\0\0\0\0\0\0\0\0\n",
    ])
    func aTornLastLineIsDroppedAndTheLogRewritten(tail: String) throws {
        let directory = try TemporaryDirectory()
        try directory.write("a 1 \(Self.digest)\n#anchored\n" + tail, to: "log")
        let log = try AckLog(directory: directory.path, name: "log")
        #expect(log.acks == [MessageID("a")!: .stored(version: 1, digest: Digest(hex: Self.digest)!)] && log.anchored)
        #expect(directory.text(of: "log") == "a 1 \(Self.digest)\n#anchored\n")
        try log.record([(MessageID("c")!, .deleted)])
        #expect(directory.text(of: "log") == "a 1 \(Self.digest)\n#anchored\nc -\n")
    }

    @Test func aLineThatIsNoAcknowledgementBeforeTheEndIsDamage() throws {
        let directory = try TemporaryDirectory()
        try directory.write("a 1 \(Self.digest)\nnot an ack\nb 1 \(Self.digest)\n", to: "log")
        #expect(throws: ClientError.local("\(directory.path)/log is damaged (a line that is not an acknowledgement): "
            + "delete it to send everything again")) {
            try AckLog(directory: directory.path, name: "log")
        }
    }

    @Test func eachKindOfLineReadsBackAndTheLastOfAnIdWins() throws {
        let directory = try TemporaryDirectory()
        try directory.write("a 1 \(Self.digest)\nb 3 \(Self.digest.uppercased())\n#anchored\na -\nc ?\n", to: "log")
        let log = try AckLog(directory: directory.path, name: "log")
        #expect(log.acks == [MessageID("a")!: .deleted, MessageID("b")!: .stored(version: 3, digest: Digest(hex: Self.digest)!),
                             MessageID("c")!: .restored])
        #expect(!log.anchored)
        #expect(Digest(hex: Self.digest)?.hex == Self.digest && Digest(hex: "12") == nil && Digest(hex: String(repeating: "g", count: 64)) == nil)
    }
}
