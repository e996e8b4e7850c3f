import Foundation
import Glibc
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

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
