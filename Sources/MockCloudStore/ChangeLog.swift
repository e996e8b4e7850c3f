import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// A key's append-only change log: fixed 256-byte text records (readable with
/// `cat`), sorted by seq, so that the first change after an anchor is a binary
/// search and a page costs in proportion to the page, not to the inbox.
///
/// `<seq:20> <P|D> <live:10> <id padded to 200>…\n`, after one header record
/// `MOCKCLOUD-INBOX-LOG 1 <generation> <compactedThrough:20> <lastSeq:20> <records:20> <epoch:20>`.
package struct ChangeLog {
    /// The size of every record, the header included.
    package static let recordSize = 256
    static let magic = "MOCKCLOUD-INBOX-LOG 1 "

    let fd: FileDescriptor
    let path: String
    package private(set) var header: ChangeLogHeader
    /// Whole, valid change records (the header not counted).
    package private(set) var count: Int

    /// Opens a log for reading; `nil` when it does not exist. A damaged tail
    /// (a crash in the middle of an append) is left out, not repaired.
    package static func openForReading(_ path: String) throws -> ChangeLog? {
        let fd: FileDescriptor
        do {
            fd = try Sys.open(path, .noFollow)
        } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        do {
            var log = try ChangeLog(fd: fd, path: path)
            log.count = try log.countOfValidRecords()
            return log
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    /// Opens a log for appending, creating it (atomically, header first) when
    /// missing, and cuts off whatever a crash left half written at its end.
    package static func openForWriting(_ path: String, directory: String) throws -> ChangeLog {
        var fd: FileDescriptor
        do {
            fd = try Sys.open(path, .readWrite | .noFollow)
        } catch let error as SystemError where error.errno == .noSuchFileOrDirectory {
            let header = ChangeLogHeader(
                generation: newGeneration(), compactedThrough: 0, lastSeq: 0, records: 0, epoch: 0)
            try StorageError.writing {
                try AtomicFile.write(
                    encode(header), to: lastComponent(path), in: directory, beforeVisibleChange: WriteProgress.beginVisibleChange)
            }
            fd = try Sys.open(path, .readWrite | .noFollow)
        }
        do {
            var log = try ChangeLog(fd: fd, path: path)
            let valid = try log.countOfValidRecords()
            let size = try Sys.size(fd, path: path)
            if size != (valid + 1) * recordSize {
                try Sys.truncate(fd, to: (valid + 1) * recordSize, path: path)
                try Sys.fdatasync(fd, path: path)
            }
            log.count = valid
            return log
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    private init(fd: FileDescriptor, path: String) throws {
        self.fd = fd
        self.path = path
        let first = try Sys.read(fd, count: Self.recordSize, at: 0, path: path)
        guard let header = Self.decodeHeader(first) else { throw InboxError.damagedLog(path: path) }
        self.header = header
        count = 0
    }

    package func close() {
        Sys.close(fd)
    }

    /// The highest seq assigned so far.
    package func lastSeq() throws -> Int64 {
        guard count > 0 else { return header.lastSeq }
        return max(header.lastSeq, try record(at: count - 1).seq)
    }

    /// The record at `index` (0 is the first change after the header).
    package func record(at index: Int) throws -> ChangeRecord {
        let bytes = try Sys.read(fd, count: Self.recordSize, at: (index + 1) * Self.recordSize, path: path)
        guard let record = Self.decodeRecord(bytes[...]) else { throw InboxError.damagedLog(path: path) }
        return record
    }

    /// `count` records from `index` on, in one read.
    package func records(from index: Int, count wanted: Int) throws -> [ChangeRecord] {
        let n = min(wanted, count - index)
        guard n > 0 else { return [] }
        let bytes = try Sys.read(fd, count: n * Self.recordSize, at: (index + 1) * Self.recordSize, path: path)
        var out: [ChangeRecord] = []
        out.reserveCapacity(n)
        for i in 0..<n {
            let start = i * Self.recordSize
            guard start + Self.recordSize <= bytes.count,
                let record = Self.decodeRecord(bytes[start..<start + Self.recordSize])
            else { throw InboxError.damagedLog(path: path) }
            out.append(record)
        }
        return out
    }

    /// The index of the first record with a seq greater than `seq`
    /// (`count` when there is none): a binary search, O(log n) reads.
    package func firstIndex(after seq: Int64) throws -> Int {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if try record(at: mid).seq <= seq { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Appends records in one write and makes them durable (one fdatasync)
    /// before any message file changes, so that no acknowledged write can be
    /// missing from the feed.
    package mutating func append(_ records: [ChangeRecord]) throws {
        guard !records.isEmpty else { return }
        try appendEncoded(Self.encode(records), records: records.count)
    }

    /// Appends one record as `append(_:)` appends many (a single write needs
    /// no array of records).
    package mutating func append(_ record: ChangeRecord) throws {
        try appendEncoded(Self.encode(record), records: 1)
    }

    private mutating func appendEncoded(_ bytes: [UInt8], records: Int) throws {
        try Sys.write(fd, bytes, at: (count + 1) * Self.recordSize, path: path)
        try Sys.fdatasync(fd, path: path)
        count += records
    }

    /// Cuts off the last `records` records: for a writer, still holding the
    /// key's lock, whose change failed before any of it could be seen (so
    /// no reader was shown their seqs). Best effort: records left are dead.
    package mutating func takeBack(_ records: Int) throws {
        let kept = max(0, count - records)
        guard kept < count else { return }
        try Sys.truncate(fd, to: (kept + 1) * Self.recordSize, path: path)
        try Sys.fdatasync(fd, path: path)
        count = kept
    }

    /// True when this is still the log at its path: no compaction has
    /// replaced it since it was opened.
    package func isStillInPlace() throws -> Bool {
        try Sys.isStill(fd, at: path)
    }

    /// Whole records whose text decodes, counted back from the end: a crash
    /// may leave a partial record or a block of zeros after the last one.
    private func countOfValidRecords() throws -> Int {
        var records = try Sys.size(fd, path: path) / Self.recordSize - 1
        while records > 0 {
            let last = try Sys.read(fd, count: Self.recordSize, at: records * Self.recordSize, path: path)
            if Self.decodeRecord(last[...]) != nil { break }
            records -= 1
        }
        return max(records, 0)
    }

    // MARK: - Encoding

    // Records are written as bytes: a 256-byte line built as a String would
    // be freed with a breadcrumbs slot, whose first release costs a process
    // a run-time type lookup (see `Sys.path`).

    static func encode(_ header: ChangeLogHeader) -> [UInt8] {
        var line = Array(magic.utf8)
        line.reserveCapacity(recordSize)
        line.append(contentsOf: header.generation.utf8)
        for value in [header.compactedThrough, header.lastSeq, Int64(header.records), header.epoch] {
            line.append(UInt8(ascii: " "))
            ASCII.appendZeroPadded(value, width: 20, to: &line)
        }
        return pad(line)
    }

    /// The seq, `P` or `D`, the live count, the id, then spaces.
    static func encode(_ record: ChangeRecord) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(recordSize)
        ASCII.appendZeroPadded(record.seq, width: 20, to: &line)
        line.append(contentsOf: (record.deleted ? " D " : " P ").utf8)
        ASCII.appendZeroPadded(Int64(record.live), width: 10, to: &line)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: record.id.rawValue.utf8)
        return pad(line)
    }

    /// Records one after another, as the log holds them.
    static func encode(_ records: [ChangeRecord]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count * recordSize)
        for record in records { bytes += encode(record) }
        return bytes
    }

    /// Reads a header at its fixed offsets: the magic (22 bytes), the
    /// generation (16), then four 20-digit numbers, each after one space.
    static func decodeHeader(_ bytes: [UInt8]) -> ChangeLogHeader? {
        guard bytes.count == recordSize, bytes.last == 0x0A, bytes.starts(with: Array(magic.utf8)) else { return nil }
        let generation = bytes[22..<38]
        guard generation.allSatisfy(Anchor.isHexDigit) else { return nil }
        var numbers: [Int64] = []
        for start in stride(from: 38, to: 122, by: 21) {
            guard bytes[start] == 0x20, let value = number(bytes[start + 1..<start + 21]) else { return nil }
            numbers.append(value)
        }
        guard bytes[122..<255].allSatisfy({ $0 == 0x20 }) else { return nil }
        return ChangeLogHeader(
            generation: String(decoding: generation, as: UTF8.self), compactedThrough: numbers[0],
            lastSeq: numbers[1], records: Int(numbers[2]), epoch: numbers[3])
    }

    static func decodeRecord(_ bytes: ArraySlice<UInt8>) -> ChangeRecord? {
        guard bytes.count == recordSize, bytes.last == 0x0A else { return nil }
        let start = bytes.startIndex
        let kind = bytes[start + 21]
        guard bytes[start + 20] == 0x20, bytes[start + 22] == 0x20, bytes[start + 33] == 0x20,
            kind == UInt8(ascii: "P") || kind == UInt8(ascii: "D"),
            let seq = number(bytes[start..<start + 20]), seq > 0,
            let live = number(bytes[start + 23..<start + 33])
        else { return nil }
        var idEnd = start + 34
        while idEnd < start + 34 + MessageID.maxLength, bytes[idEnd] != 0x20 { idEnd += 1 }
        guard let id = MessageID(String(decoding: bytes[start + 34..<idEnd], as: UTF8.self)) else { return nil }
        return ChangeRecord(seq: seq, deleted: kind == UInt8(ascii: "D"), live: Int(live), id: id)
    }

    private static func number<S: Sequence>(_ text: S) -> Int64? where S.Element == UInt8 {
        var value: Int64 = 0
        var any = false
        for byte in text {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            value = sum
            any = true
        }
        return any ? value : nil
    }

    /// Pads a line with spaces to the record size, ending in a newline.
    private static func pad(_ line: [UInt8]) -> [UInt8] {
        var bytes = line
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: recordSize - 1 - bytes.count))
        bytes.append(0x0A)
        return bytes
    }

    static func lastComponent(_ path: String) -> String {
        String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...])
    }

    /// 64 random bits from the kernel, as 16 hex digits.
    static func newGeneration() -> String {
        ASCII.hex(Random.bytes(8))
    }
}

extension ChangeLog {
    /// A new log written beside the live one and put in its place at once
    /// (compaction): records first, in any number of `append`s, then, in
    /// `commit`, the records that must follow them and the header; then it
    /// is synced, renamed over the live log, and the folder synced. Until
    /// `commit` renames it, the live log is untouched, and a crash leaves a
    /// temporary file (`.~changes.log`) that the next compaction replaces.
    package struct Replacement {
        private var file: PendingFile

        /// Starts the new log of the log at `path`, its header's place
        /// reserved. Throws `StorageError`, as each step does.
        package init(of path: String, directory: String) throws {
            file = try StorageError.writing { try PendingFile(ChangeLog.lastComponent(path), in: directory) }
            do {
                try StorageError.writing { try file.append(ChangeLog.pad([])) }
            } catch {
                file.abandon()
                throw error
            }
        }

        /// Records after the header, so far.
        package var count: Int { file.size / ChangeLog.recordSize - 1 }

        /// Adds `records` at the end.
        package mutating func append(_ records: [ChangeRecord]) throws {
            try StorageError.writing { try file.append(ChangeLog.encode(records)) }
        }

        /// Makes the records so far durable, so that `commit` syncs only what it adds.
        package func sync() throws {
            try StorageError.writing { try file.sync() }
        }

        /// Adds `records`, writes `header` in its place, and puts the new
        /// log in place of the live one, durably. A failure before the
        /// rename leaves the live log and removes the new one.
        package mutating func commit(header: ChangeLogHeader, then records: [ChangeRecord]) throws {
            do {
                try StorageError.writing {
                    try file.append(ChangeLog.encode(records))
                    try file.write(ChangeLog.encode(header), at: 0)
                }
            } catch {
                file.abandon()
                throw error
            }
            try StorageError.writing { try file.commit() }
        }

        /// Removes the new log, best effort; nothing once committed.
        package mutating func abandon() {
            file.abandon()
        }
    }
}
