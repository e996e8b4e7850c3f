import MockCloudClient
import MockCloudSystem
import MockCloudWire

/// `.mockcloud-sync-pushed`: what the box acknowledged to `push`, as a log
/// in the folder. Each bulk request's acknowledgements are appended as
/// lines and synced, so a new scan costs a line, whatever the folder holds;
/// the file is rewritten whole (temporary file, fsync, rename) only when it
/// holds more than twice its live lines and a thousand more, and when it
/// was left torn. One line each, the last line of an id winning:
///
/// - `<id> <version> <sha256>`: stored at that version with that compact
///   body (what earlier releases wrote, one line per id: read as is);
/// - `<id> -`: deleted on the box (`--delete`), kept so that a deletion is
///   repeated should the box come back from an older backup;
/// - `<id> ?`: a deletion to repeat: the box was restored since;
/// - `#anchored`: the push anchor (`.mockcloud-sync-push-anchor`) was taken
///   after every line above it. Acknowledgements after the last one mean
///   the anchor is stale (`PushLedger.anchorIsStale`), even across a stop.
///
/// A crash while appending leaves a torn line: one without its line end,
/// or with a hole of zeros where a page did not reach the disk. Such a
/// line was never acknowledged as recorded: it is ignored (the item is
/// sent again, which the box answers 200) and the log is rewritten
/// without it. Any other line that does not read means the file is damaged.
final class AckLog {
    /// What the box holds of one id, as far as the push knows.
    enum Ack: Equatable {
        /// Stored at `version`, with the compact body whose SHA-256 this is.
        case stored(version: Int64, digest: Digest)
        /// Deleted by this push.
        case deleted
        /// Deleted by this push, but the box was restored since and may
        /// hold it again: with `--delete`, deleted again.
        case restored
    }

    let directory: String
    let name: String
    /// The live acknowledgements.
    private(set) var acks = AckTable()
    /// The anchor was taken after the last acknowledgement.
    private(set) var anchored = false
    /// Lines in the file, live or not: what decides a compaction.
    private var lines = 0
    /// Open for appending, once the first append needs it.
    private var appender: FileDescriptor?
    /// Bytes written to the file since it was opened (appends and
    /// compactions): what a test holds to a bound.
    private(set) var bytesWritten = 0

    static let anchoredLine = "#anchored"

    /// Reads the log (a missing file is an empty one). A torn last line is
    /// dropped and the log rewritten without it.
    init(directory: String, name: String) throws(ClientError) {
        self.directory = directory
        self.name = name
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(name, in: directory)
        } catch {
            throw .local("cannot read \(path): \(ClientError.describe(error))")
        }
        guard let bytes, !bytes.isEmpty else { return }
        var torn = false
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
            let line = bytes[start..<(end ?? bytes.count)]
            start = (end ?? bytes.count) + 1
            if end == nil || line.contains(0) {
                torn = true  // never acknowledged as recorded
                continue
            }
            guard apply(line) else {
                throw .local("\(path) is damaged (a line that is not an acknowledgement): delete it to send everything again")
            }
            lines += 1
        }
        if torn { try compact() }
    }

    deinit { closeAppender() }

    private var path: String { directory + "/" + name }

    /// One line into `acks`; false when it does not read.
    private func apply(_ line: ArraySlice<UInt8>) -> Bool {
        if line.elementsEqual(Self.anchoredLine.utf8) {
            anchored = true
            return true
        }
        let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard let id = MessageID(String(decoding: fields[0], as: UTF8.self)) else { return false }
        let ack: Ack
        switch fields.count {
        case 2 where fields[1].elementsEqual("-".utf8): ack = .deleted
        case 2 where fields[1].elementsEqual("?".utf8): ack = .restored
        case 3:
            guard let version = Int64(String(decoding: fields[1], as: UTF8.self)), version >= 0,
                  let digest = Digest(hex: fields[2]) else { return false }
            ack = .stored(version: version, digest: digest)
        default: return false
        }
        acks[id] = ack
        anchored = false
        return true
    }

    private static func line(_ id: MessageID, _ ack: Ack) -> String {
        switch ack {
        case .stored(let version, let digest): return "\(id.rawValue) \(version) \(digest.hex)\n"
        case .deleted: return id.rawValue + " -\n"
        case .restored: return id.rawValue + " ?\n"
        }
    }

    /// Records `changes` with one append and one sync.
    func record(_ changes: [(MessageID, Ack)]) throws(ClientError) {
        guard !changes.isEmpty else { return }
        var text = ""
        for (id, ack) in changes {
            acks[id] = ack
            text += Self.line(id, ack)
        }
        anchored = false
        try append(text, lines: changes.count)
    }

    /// Records that the push anchor was just taken, after every line so far.
    func markAnchored() throws(ClientError) {
        guard !anchored else { return }
        anchored = true
        try append(Self.anchoredLine + "\n", lines: 1)
    }

    /// Replaces every acknowledgement with `acks` (a rewrite of the file).
    func replace(with acks: AckTable) throws(ClientError) {
        self.acks = acks
        anchored = false
        try compact()
    }

    private func append(_ text: String, lines added: Int) throws(ClientError) {
        if lines + added > 2 * acks.count + 1000 {
            lines += added  // a compaction writes them with the rest
            try compact()
            return
        }
        do {
            let fd: FileDescriptor
            if let appender {
                fd = appender
            } else {
                let existed = Sys.exists(path)
                fd = try Sys.open(path, .writeOnly | .append | .create | .noFollow, mode: 0o600)
                appender = fd
                if !existed { try Sys.syncDirectory(directory) }
            }
            let bytes = Array(text.utf8)
            try Sys.writeAll(fd, bytes, path: path)
            try Sys.fdatasync(fd, path: path)
            bytesWritten += bytes.count
            lines += added
        } catch {
            throw .local("cannot write \(path): \(ClientError.describe(error))")
        }
    }

    /// Rewrites the file with the live lines only (atomically).
    private func compact() throws(ClientError) {
        closeAppender()
        var text = ""
        text.reserveCapacity(acks.count * 90)
        for id in acks.keys.sorted() { text += Self.line(id, acks[id]!) }
        if anchored { text += Self.anchoredLine + "\n" }
        let bytes = Array(text.utf8)
        do {
            try AtomicFile.write(bytes, to: name, in: directory)
        } catch {
            throw .local("cannot write \(path): \(ClientError.describe(error))")
        }
        bytesWritten += bytes.count
        lines = acks.count + (anchored ? 1 : 0)
    }

    /// Closes the file (the log may be read or appended to again after).
    func closeAppender() {
        if let appender { Sys.close(appender) }
        appender = nil
    }
}

/// The acknowledgements by id, kept small: an id's slot in the table, and
/// its version and digest in arrays of their own (60 bytes an id or so,
/// where a dictionary of `Ack` values takes about twice that once its
/// buckets double), since a folder's every file has one.
struct AckTable: Equatable, ExpressibleByDictionaryLiteral {
    private var slots: [MessageID: Int32] = [:]
    /// Each slot's version; `deletedMark` or `restoredMark` for those.
    private var versions: [Int64] = []
    private var digests: [Digest] = []
    /// Slots of ids removed, to reuse.
    private var free: [Int32] = []
    private static let deletedMark: Int64 = -1, restoredMark: Int64 = -2

    init() {}

    init(dictionaryLiteral elements: (MessageID, AckLog.Ack)...) {
        for (id, ack) in elements { self[id] = ack }
    }

    var count: Int { slots.count }
    var isEmpty: Bool { slots.isEmpty }
    /// The ids, in no order.
    var keys: Dictionary<MessageID, Int32>.Keys { slots.keys }

    subscript(id: MessageID) -> AckLog.Ack? {
        get {
            guard let slot = slots[id].map(Int.init) else { return nil }
            switch versions[slot] {
            case Self.deletedMark: return .deleted
            case Self.restoredMark: return .restored
            case let version: return .stored(version: version, digest: digests[slot])
            }
        }
        set {
            guard let ack = newValue else {
                if let slot = slots.removeValue(forKey: id) { free.append(slot) }
                return
            }
            let (version, digest): (Int64, Digest)
            switch ack {
            case .stored(let v, let d): (version, digest) = (v, d)
            case .deleted: (version, digest) = (Self.deletedMark, .none)
            case .restored: (version, digest) = (Self.restoredMark, .none)
            }
            if let slot = slots[id].map(Int.init) {
                versions[slot] = version
                digests[slot] = digest
            } else if let slot = free.popLast() {
                slots[id] = slot
                versions[Int(slot)] = version
                digests[Int(slot)] = digest
            } else {
                slots[id] = Int32(versions.count)
                versions.append(version)
                digests.append(digest)
            }
        }
    }

    /// The table with each acknowledgement transformed (nil: dropped).
    func compactMapValues(_ transform: (AckLog.Ack) -> AckLog.Ack?) -> AckTable {
        var table = AckTable()
        for id in keys { table[id] = transform(self[id]!) }
        return table
    }

    /// The same as a dictionary (for tests and messages).
    var dictionary: [MessageID: AckLog.Ack] {
        Dictionary(uniqueKeysWithValues: keys.map { ($0, self[$0]!) })
    }

    static func == (a: AckTable, b: AckTable) -> Bool { a.dictionary == b.dictionary }
}

/// A SHA-256 in 32 bytes rather than its 64 hex digits: an acknowledged id
/// costs the log's memory a few dozen bytes.
struct Digest: Hashable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    private init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

    /// No digest (a deletion's).
    static let none = Digest(words: (0, 0, 0, 0))

    /// From 64 lowercase or uppercase hex digits; nil otherwise.
    init?<Text: Collection<UInt8>>(hex: Text) {
        guard hex.count == 64 else { return nil }
        var words: [UInt64] = [0, 0, 0, 0]
        for (index, byte) in hex.enumerated() {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            words[index / 16] = words[index / 16] << 4 | UInt64(value)
        }
        self.words = (words[0], words[1], words[2], words[3])
    }

    init?(hex: String) { self.init(hex: hex.utf8) }

    /// The 64 lowercase hex digits.
    var hex: String {
        var text = ""
        text.reserveCapacity(64)
        for word in [words.0, words.1, words.2, words.3] {
            let digits = String(word, radix: 16)
            text += String(repeating: "0", count: 16 - digits.utf8.count) + digits
        }
        return text
    }

    static func == (a: Digest, b: Digest) -> Bool { a.words == b.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}
