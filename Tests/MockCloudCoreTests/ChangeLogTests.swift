import Foundation
import Glibc
@testable import MockCloudCore
import Testing

// The inbox's change log on its own: the 256-byte text record format, and
// what readers and writers do with a log that a crash left damaged.

@Suite struct ChangeLogEncodingTests {
    static func record(_ seq: Int64, deleted: Bool = false, live: Int = 1, _ id: String) -> ChangeRecord {
        ChangeRecord(seq: seq, deleted: deleted, live: live, id: MessageID(id)!)
    }

    @Test func aRecordIsOneFixedWidthTextLine() {
        let bytes = ChangeLog.encode(Self.record(17, live: 3, "nm-1234-weight"))
        #expect(bytes.count == 256)
        #expect(bytes.last == 0x0A)
        #expect(String(decoding: bytes, as: UTF8.self)
            == "00000000000000000017 P 0000000003 nm-1234-weight" + String(repeating: " ", count: 207) + "\n")
        let deletion = ChangeLog.encode(Self.record(18, deleted: true, live: 2, "nm-1234-weight"))
        #expect(String(decoding: deletion.prefix(34), as: UTF8.self) == "00000000000000000018 D 0000000002 ")
    }

    static let records: [ChangeRecord] = [
        record(1, live: 0, "a"),
        record(2, deleted: true, live: 0, "."),
        record(Int64.max, live: 9_999_999_999, "a:b.c-d_e"),
        record(42, deleted: true, live: 100_000, String(repeating: "x", count: 200)),
    ]

    @Test(arguments: ChangeLogEncodingTests.records)
    func recordsRoundTripAt256Bytes(record: ChangeRecord) {
        let bytes = ChangeLog.encode(record)
        #expect(bytes.count == ChangeLog.recordSize)
        #expect(bytes.last == 0x0A)
        #expect(ChangeLog.decodeRecord(bytes[...]) == record)
        // Inside a larger buffer too, as a page read hands them over.
        let buffer = ChangeLog.encode(Self.record(1, "z")) + bytes
        #expect(ChangeLog.decodeRecord(buffer[256..<512]) == record)
    }

    static let headers: [ChangeLogHeader] = [
        ChangeLogHeader(generation: "0123456789abcdef", compactedThrough: 0, lastSeq: 0, records: 0, epoch: 0),
        ChangeLogHeader(generation: "ffffffffffffffff", compactedThrough: 7, lastSeq: 8, records: 2, epoch: 0),
        ChangeLogHeader(generation: "0000000000000000", compactedThrough: Int64.max, lastSeq: Int64.max, records: 1 << 40, epoch: 0),
    ]

    @Test(arguments: ChangeLogEncodingTests.headers)
    func headersRoundTripAt256Bytes(header: ChangeLogHeader) {
        let bytes = ChangeLog.encode(header)
        #expect(bytes.count == ChangeLog.recordSize)
        #expect(bytes.last == 0x0A)
        #expect(String(decoding: bytes.prefix(22), as: UTF8.self) == "MOCKCLOUD-INBOX-LOG 1 ")
        #expect(ChangeLog.decodeHeader(bytes) == header)
        #expect(ChangeLog.decodeRecord(bytes[...]) == nil)
    }

    static func line(_ text: String, width: Int = 256) -> [UInt8] {
        Array((text + String(repeating: " ", count: max(0, width - 1 - text.utf8.count)) + "\n").utf8)
    }

    static let badRecords: [[UInt8]] = [
        line("00000000000000000017 X 0000000003 m"),
        line("00000000000000000017 p 0000000003 m"),
        line("00000000000000000000 P 0000000003 m"),
        line("0000000000000000001a P 0000000003 m"),
        line("-0000000000000000017 P 0000000003 m"),
        line("99999999999999999999 P 0000000003 m"),
        line("00000000000000000017 P 000000000x m"),
        line("00000000000000000017  P 000000003 m"),
        line("00000000000000000017 P 0000000003 a/b"),
        line("00000000000000000017 P 0000000003 caf\u{e9}"),
        line("00000000000000000017 P 0000000003 "),
        line("00000000000000000017 P 0000000003 m", width: 255),
        line("00000000000000000017 P 0000000003 m", width: 257),
        Array(line("00000000000000000017 P 0000000003 m").dropLast()) + [0x20],
        Array(repeating: 0, count: 256),
        Array(repeating: 0x20, count: 255) + [0x0A],
        [],
    ]

    @Test(arguments: ChangeLogEncodingTests.badRecords)
    func decodeRecordRejectsAnythingButARecord(bytes: [UInt8]) {
        #expect(ChangeLog.decodeRecord(bytes[...]) == nil)
    }

    static let badHeaders: [[UInt8]] = [
        line("MOCKCLOUD-INBOX-LOG 2 0123456789abcdef 00000000000000000000 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOX 1 0123456789abcdef 00000000000000000000 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOG 1 0123456789ABCDEF 00000000000000000000 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOG 1 0123456789abcde 00000000000000000000 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOG 1 0123456789abcdef 0000000000000000000x 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOG 1 0123456789abcdef 00000000000000000000 00000000000000000000"),
        line("MOCKCLOUD-INBOX-LOG 1 0123456789abcdef 00000000000000000000 00000000000000000000 00000000000000000000", width: 255),
        ChangeLog.encode(ChangeRecord(seq: 1, deleted: false, live: 1, id: MessageID("m")!)),
        Array(repeating: 0, count: 256),
    ]

    @Test(arguments: ChangeLogEncodingTests.badHeaders)
    func decodeHeaderRejectsAnythingButAHeader(bytes: [UInt8]) {
        #expect(ChangeLog.decodeHeader(bytes) == nil)
    }

    @Test func generationsAre16LowercaseHexDigitsAndDiffer() {
        let generations = (0..<50).map { _ in ChangeLog.newGeneration() }
        for generation in generations {
            #expect(generation.utf8.count == 16)
            #expect(generation.utf8.allSatisfy(Anchor.isHexDigit))
        }
        #expect(Set(generations).count == 50)
    }
}

@Suite struct ChangeLogFileTests {
    let directory: String
    var path: String { directory + "/changes.log" }

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/mockcloud-log-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError("mkdtemp", errno: errno)
        }
        directory = String(cString: made)
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

    @Test func aRewrittenLogKeepsLastSeqEvenWithoutRecords() throws {
        defer { cleanUp() }
        let header = ChangeLogHeader(generation: "00000000000000aa", compactedThrough: 40, lastSeq: 42, records: 0, epoch: 0)
        try ChangeLog.rewrite(path, directory: directory, header: header, records: [])
        let log = try ChangeLog.openForWriting(path, directory: directory)
        defer { log.close() }
        #expect(log.header == header)
        #expect(try log.lastSeq() == 42)
        #expect(size() == 256)
    }

    @Test func aRewrittenLogHoldsExactlyItsRecords() throws {
        defer { cleanUp() }
        let header = ChangeLogHeader(generation: "00000000000000aa", compactedThrough: 0, lastSeq: 9, records: 2, epoch: 0)
        let records = [ChangeLogEncodingTests.record(5, "b"), ChangeLogEncodingTests.record(9, deleted: true, live: 1, "a")]
        try ChangeLog.rewrite(path, directory: directory, header: header, records: records)
        let bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        #expect(bytes == ChangeLog.encode(header) + records.flatMap { ChangeLog.encode($0) })
        let log = try #require(try ChangeLog.openForReading(path))
        defer { log.close() }
        #expect(try log.records(from: 0, count: 2) == records)
    }
}
