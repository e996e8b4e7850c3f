import Foundation
import MockCloudJSON
import MockCloudWire

/// What the box acknowledged, kept so that it can be sent again when the
/// box loses it (restored from an older backup: a 410 `replaced` or
/// `ahead`): the state directory's `sent` file (docs/SYNC-STATE.md). Each
/// acknowledgement appends one record (the journal's line format, an
/// `enqueue` record of the uploads acknowledged, bodies included: the
/// journal drops them at its compaction), written and synced before the
/// journal says the uploads left the queue, so that a kill in between
/// sends them again rather than forgets them. Nothing of it stays in
/// memory; a recovery reads it through. It is compacted to the newest
/// version of each id when it is more than 4 times that and over 64 KiB.
/// A record that does not read (a tail a crash cut short or holed) is
/// skipped: it only costs the recovery of what it held.
final class SentLog {
    let path: String
    private var handle: FileHandle
    /// The bytes of the file: the next record is written here.
    private(set) var size: UInt64
    /// What the newest records took when last measured (the first line
    /// says it after a compaction): a compaction is looked at once the
    /// file is 4 times that.
    private var measured: UInt64
    /// Set when a failed write could not be undone; nothing more is
    /// written until the engine is opened again.
    private var broken: String?

    /// The first line of a compacted file: `{"sent": <bytes its records took>}`.
    private static let headerOpening = Array(#"{"sent": "#.utf8)

    /// Opens (or starts) `directory`'s sent log. A file that does not end
    /// with a line end (a crash cut its last record) gets one, so that the
    /// next record is a line of its own.
    static func open(directory: String) throws -> SentLog {
        let path = directory + "/sent"
        Platform.removeLeftovers(of: path)
        let handle = try SyncJournal.notWritable { try Platform.openForUpdating(path) }
        let size = try Platform.size(of: handle, path: path)
        var measured = size
        var reader = try LineReader(handle, path: path)
        if let (_, first, ended) = try reader.next(), ended, SyncJournal.checksumMatches(first),
            first.dropFirst(17).starts(with: headerOpening),
            let object = (try? JSONParser.parse(Array(first.dropFirst(17)), maxDepth: 2))?.objectValue,
            let live = object["sent"]?.int64Value, live >= 0
        {
            measured = UInt64(live)
        }
        let log = SentLog(path: path, handle: handle, size: size, measured: measured)
        if size > 0, try Platform.read(handle, at: size - 1, count: 1, path: path) != [UInt8(ascii: "\n")] {
            try log.write([UInt8(ascii: "\n")])
        }
        return log
    }

    private init(path: String, handle: FileHandle, size: UInt64, measured: UInt64) {
        self.path = path
        self.handle = handle
        self.size = size
        self.measured = measured
    }

    deinit { try? handle.close() }

    /// Records that the box holds `uploads` (acknowledged puts and
    /// deletions): when this returns they are on disk. Then compacts when due.
    func record(_ uploads: [SyncQueue.Upload]) throws {
        guard !uploads.isEmpty else { return }
        try write(SyncJournal.line(SyncRecord.enqueue(uploads).json))
        if size > SyncJournal.compactionFloor, size > 4 * measured { try? compact() }
    }

    private func write(_ bytes: [UInt8]) throws {
        if let broken { throw ClientError.stateNotWritable(broken) }
        do {
            try Platform.append(bytes, to: handle, at: size, path: path)
        } catch let failure as Platform.AppendFailure {
            let what = "cannot write \(path): \(failure.reason)"
            if !failure.intact { broken = what + "; open the engine again once the device has space" }
            throw ClientError.stateNotWritable(what + ": free space on the device (or make the directory writable) and try again")
        }
        size += UInt64(bytes.count)
    }

    /// The newest acknowledged change of each id, where its body is in the
    /// file, read through the file (one chunk at a time), and what they take.
    func newest() throws -> (entries: [MessageID: SyncQueue.Entry], bytes: UInt64) {
        var reader = try LineReader(handle, path: path)
        var newest: [MessageID: SyncQueue.Entry] = [:]
        while let (start, line, ended) = try reader.next() {
            guard ended, SyncJournal.checksumMatches(line), let entries = SyncJournal.enqueued(line.dropFirst(17), at: start + 17)
            else { continue }
            for entry in entries { newest[entry.id] = entry }
        }
        let bytes = newest.values.reduce(UInt64(0)) { $0 + UInt64(64 + $1.id.rawValue.utf8.count + ($1.body?.count ?? 0)) }
        return (newest, bytes)
    }

    /// The changes of `entries`, bodies read from the file.
    func load(_ entries: [SyncQueue.Entry]) throws -> [SyncQueue.Upload] {
        try SyncJournal.load(entries, from: handle, path: path)
    }

    /// Rewrites the file as the newest change of each id when it is more
    /// than 4 times what they take (a temporary file renamed over it, as
    /// the journal's compaction); otherwise notes what they take.
    func compact() throws {
        let (newest, live) = try newest()
        measured = live
        guard size > SyncJournal.compactionFloor, size > 4 * live else { return }
        let entries = newest.values.sorted { $0.number < $1.number }
        var written: UInt64 = 0
        try SyncJournal.notWritable {
            try Platform.replace(path) { write in
                func put(_ line: [UInt8]) throws {
                    try write(line)
                    written += UInt64(line.count)
                }
                try put(SyncJournal.line(Self.headerOpening + Array("\(live)}".utf8)))
                for batch in SyncJournal.recordRuns(entries) {
                    try put(SyncJournal.line(SyncRecord.enqueue(try load(Array(batch))).json))
                }
            }
        }
        try SyncJournal.reopen(&handle, path, after: "compacting", broken: &broken)
        size = written
    }
}
