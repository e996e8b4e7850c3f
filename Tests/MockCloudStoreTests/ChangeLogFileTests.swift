import Foundation
import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

@Suite struct ChangeLogFileTests {
    let folder: TemporaryDirectory
    var directory: String { folder.path }
    var path: String { directory + "/changes.log" }

    init() throws {
        folder = try TemporaryDirectory(prefix: "mockcloud-log")
    }

    func size() -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    func appendRaw(_ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_APPEND)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: directory) }

    @Test func aMissingLogIsNilForReadersAndCreatedHeaderFirstForWriters() throws {
        defer { cleanUp() }
        #expect(try ChangeLog.openForReading(path) == nil)
        let log = try ChangeLog.openForWriting(path, directory: directory)
        defer { log.close() }
        #expect(size() == 256)
        #expect(log.count == 0)
        #expect(try log.lastSeq() == 0)
        #expect(log.header.compactedThrough == 0)
        #expect(log.header.records == 0)
        #expect(log.header.generation.utf8.count == 16)
        let reader = try #require(try ChangeLog.openForReading(path))
        defer { reader.close() }
        #expect(reader.header == log.header)
        #expect(reader.count == 0)
    }

    @Test func appendedRecordsAreReadBackAndFoundByBinarySearch() throws {
        defer { cleanUp() }
        var log = try ChangeLog.openForWriting(path, directory: directory)
        defer { log.close() }
        let records = [2, 4, 6, 8, 10].map { ChangeLogEncodingTests.record(Int64($0), live: $0 / 2, "m\($0)") }
        for record in records { try log.append(record) }
        #expect(size() == 6 * 256)
        #expect(log.count == 5)
        #expect(try log.lastSeq() == 10)
        #expect(try log.record(at: 2) == records[2])
        #expect(try log.records(from: 0, count: 100) == records)
        #expect(try log.records(from: 3, count: 1) == [records[3]])
        #expect(try log.records(from: 5, count: 3) == [])
        for (seq, index) in [(0, 0), (1, 0), (2, 1), (3, 1), (9, 4), (10, 5), (11, 5)] as [(Int64, Int)] {
            #expect(try log.firstIndex(after: seq) == index, "after \(seq)")
        }
        let reader = try #require(try ChangeLog.openForReading(path))
        defer { reader.close() }
        #expect(try reader.records(from: 0, count: 5) == records)
    }

    static let tails: [[UInt8]] = [
        Array(repeating: UInt8(ascii: "x"), count: 100),
        Array(repeating: 0, count: 256),
        Array(repeating: 0, count: 700),
        Array(ChangeLog.encode(ChangeRecord(seq: 3, deleted: false, live: 1, id: MessageID("c")!)).prefix(200)),
    ]

    @Test(arguments: ChangeLogFileTests.tails)
    func readersLeaveADamagedTailAloneAndWritersCutIt(tail: [UInt8]) throws {
        defer { cleanUp() }
        var log = try ChangeLog.openForWriting(path, directory: directory)
        let records = [ChangeLogEncodingTests.record(1, "a"), ChangeLogEncodingTests.record(2, live: 2, "b")]
        for record in records { try log.append(record) }
        log.close()
        try appendRaw(tail)

        let reader = try #require(try ChangeLog.openForReading(path))
        #expect(reader.count == 2)
        #expect(try reader.lastSeq() == 2)
        reader.close()
        #expect(size() == 3 * 256 + tail.count)

        var writer = try ChangeLog.openForWriting(path, directory: directory)
        defer { writer.close() }
        #expect(size() == 3 * 256)
        #expect(writer.count == 2)
        let next = ChangeLogEncodingTests.record(3, live: 3, "c")
        try writer.append(next)
        #expect(try writer.records(from: 0, count: 3) == records + [next])
        #expect(size() == 4 * 256)
    }

    @Test func aReplacementLogKeepsLastSeqEvenWithoutRecords() throws {
        defer { cleanUp() }
        let header = ChangeLogHeader(generation: "00000000000000aa", compactedThrough: 40, lastSeq: 42, records: 0, epoch: 0)
        var replacement = try ChangeLog.Replacement(of: path, directory: directory)
        try replacement.commit(header: header, then: [])
        let log = try ChangeLog.openForWriting(path, directory: directory)
        defer { log.close() }
        #expect(log.header == header)
        #expect(try log.lastSeq() == 42)
        #expect(size() == 256)
    }

    @Test func aReplacementLogHoldsItsRecordsThenTheOnesCommittedWithItsHeader() throws {
        defer { cleanUp() }
        let header = ChangeLogHeader(generation: "00000000000000aa", compactedThrough: 0, lastSeq: 11, records: 3, epoch: 0)
        let first = [ChangeLogEncodingTests.record(5, "b"), ChangeLogEncodingTests.record(9, deleted: true, live: 1, "a")]
        let last = [ChangeLogEncodingTests.record(11, live: 2, "c")]
        var replacement = try ChangeLog.Replacement(of: path, directory: directory)
        try replacement.append(first)
        try replacement.sync()
        #expect(replacement.count == 2)
        #expect(size() == -1)  // nothing in place before the commit
        try replacement.commit(header: header, then: last)
        let bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        #expect(bytes == ChangeLog.encode(header) + (first + last).flatMap { ChangeLog.encode($0) })
        let log = try #require(try ChangeLog.openForReading(path))
        defer { log.close() }
        #expect(try log.records(from: 0, count: 3) == first + last)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["changes.log"])
    }

    @Test func anAbandonedReplacementLeavesTheLiveLogAndNoTemporary() throws {
        defer { cleanUp() }
        var live = try ChangeLog.openForWriting(path, directory: directory)
        try live.append(ChangeLogEncodingTests.record(1, "a"))
        live.close()
        let before = try #require(FileManager.default.contents(atPath: path))
        var replacement = try ChangeLog.Replacement(of: path, directory: directory)
        try replacement.append([ChangeLogEncodingTests.record(1, "a")])
        replacement.abandon()
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["changes.log"])
    }

    @Test func aReplacementTakesThePlaceOfAKilledCompactionsLeftover() throws {
        defer { cleanUp() }
        // What a compaction killed in its build step left: a partial new log.
        #expect(FileManager.default.createFile(atPath: directory + "/.~changes.log", contents: Data(repeating: 0x20, count: 300)))
        let header = ChangeLogHeader(generation: "00000000000000aa", compactedThrough: 0, lastSeq: 1, records: 1, epoch: 0)
        var replacement = try ChangeLog.Replacement(of: path, directory: directory)
        try replacement.commit(header: header, then: [ChangeLogEncodingTests.record(1, "a")])
        #expect(size() == 2 * 256)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["changes.log"])
    }
}
