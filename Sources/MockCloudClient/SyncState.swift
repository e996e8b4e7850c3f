import Foundation
import MockCloudJSON
import MockCloudWire

/// What a `SyncEngine` holds for the box: the uploads and settings edits not
/// yet acknowledged. Changed only by `apply(_:)`, from the journal's records
/// when the engine opens and from each new record once it is on disk, so
/// what the engine holds in memory is what a restart would read
/// (docs/SYNC-STATE.md).
struct SyncQueue: Equatable {
    /// An upload and its number, which says which of two versions of one id
    /// is the later one to be handed over.
    struct Upload: Equatable, Sendable {
        var number: Int64
        var item: UploadItem
    }

    /// A settings member's edit: its whole new value (`null`: deleted) and when.
    struct Edit: Equatable, Sendable {
        var number: Int64
        var at: Timestamp.Micros
        var value: JSONValue
    }

    private(set) var uploads: [MessageID: Upload] = [:]
    private(set) var edits: [String: Edit] = [:]
    /// The highest number handed out; the next one is one more.
    private(set) var lastNumber: Int64 = 0
    /// Upload numbers to their ids, for `done` records.
    private var idsByNumber: [Int64: MessageID] = [:]

    var isEmpty: Bool { uploads.isEmpty && edits.isEmpty }

    mutating func apply(_ record: SyncRecord) {
        switch record {
        case .header(_, let numbered):
            lastNumber = max(lastNumber, numbered)
        case .enqueue(let uploads):
            for upload in uploads {
                lastNumber = max(lastNumber, upload.number)
                if Self.replaces(upload.item, self.uploads[upload.item.id]?.item) {
                    if let old = self.uploads[upload.item.id] { idsByNumber[old.number] = nil }
                    self.uploads[upload.item.id] = upload
                    idsByNumber[upload.number] = upload.item.id
                }
            }
        case .edit(let number, let at, let members):
            lastNumber = max(lastNumber, number)
            for member in members where (edits[member.key]?.at ?? .min) <= at {
                edits[member.key] = Edit(number: number, at: at, value: member.value)
            }
        case .done(let numbers):
            for number in numbers {
                guard let id = idsByNumber.removeValue(forKey: number) else { continue }
                uploads[id] = nil
            }
        case .editsDone(let members):
            for (name, number) in members where edits[name]?.number == number {
                edits[name] = nil
            }
        }
    }

    /// Whether `item` takes the place of `queued`, the unsent change of the
    /// same id: a deletion always does, and so does a put, unless `queued`
    /// is a put of a higher version (which the box would keep anyway).
    static func replaces(_ item: UploadItem, _ queued: UploadItem?) -> Bool {
        guard case .put(let version, _) = item.change, case .put(let held, _)? = queued?.change else { return true }
        return version >= held
    }

    /// The uploads in the order they were handed over.
    var uploadsInOrder: [Upload] { uploads.values.sorted { $0.number < $1.number } }

    /// The records that rebuild this queue on their own (a compaction).
    func records(userKey: UserKey) -> [SyncRecord] {
        var records: [SyncRecord] = [.header(userKey: userKey.rawValue, numbered: lastNumber)]
        if !uploads.isEmpty { records.append(.enqueue(uploadsInOrder)) }
        let byEdit = Dictionary(grouping: edits) { $0.value.number }
        for number in byEdit.keys.sorted() {
            let members = byEdit[number]!.sorted { $0.key < $1.key }
            records.append(.edit(number: number, at: members[0].value.at, members: members.map { JSONMember($0.key, $0.value.value) }))
        }
        return records
    }
}

/// One line of the journal (docs/SYNC-STATE.md).
enum SyncRecord: Equatable {
    /// The first record: the format, the user key whose changes these are,
    /// and the highest number handed out before it (numbers are never
    /// handed out twice, so an acknowledgement cannot be taken for a later
    /// change's).
    case header(userKey: String, numbered: Int64)
    /// Changes handed to `enqueue`, each with its number.
    case enqueue([SyncQueue.Upload])
    /// Settings members edited at `at` (one `editSettings` call).
    case edit(number: Int64, at: Timestamp.Micros, members: [JSONMember])
    /// Uploads that left the queue: acknowledged, or refused, by the box.
    case done([Int64])
    /// Settings edits that left the queue, member to edit number.
    case editsDone([String: Int64])

    static let format = "mockcloud-sync-state 1"

    /// The record's JSON object.
    var json: [UInt8] {
        switch self {
        case .header(let userKey, let numbered):
            return JSONPrinter.compact(.object(JSONObject([
                JSONMember("format", .string(Self.format)), JSONMember("userKey", .string(userKey)),
                JSONMember("numbered", .number(String(numbered))),
            ])))
        case .enqueue(let uploads):
            // The bulk request's item encoding, with the number in front.
            var out = Array(#"{"enqueue": ["#.utf8)
            for (k, upload) in uploads.enumerated() {
                out += Array((k == 0 ? #"{"n": "# : #", {"n": "#).utf8)
                ASCII.appendDecimal(Int(upload.number), to: &out)
                out += Array(", ".utf8) + BulkRequest.encode(upload.item.wire).dropFirst()
            }
            return out + Array("]}".utf8)
        case .edit(let number, let at, let members):
            return JSONPrinter.compact(.object(JSONObject([JSONMember("edit", .object(JSONObject([
                JSONMember("n", .number(String(number))), JSONMember("at", .string(Timestamp.format(at))),
                JSONMember("members", .object(JSONObject(members))),
            ])))])))
        case .done(let numbers):
            return JSONPrinter.compact(.object(JSONObject([JSONMember("done", .array(numbers.map { .number(String($0)) }))])))
        case .editsDone(let members):
            let done = members.sorted { $0.key < $1.key }.map { JSONMember($0.key, .number(String($0.value))) }
            return JSONPrinter.compact(.object(JSONObject([JSONMember("editsDone", .object(JSONObject(done)))])))
        }
    }

    /// The record a JSON object holds; nil when it is none this version writes.
    init?(_ object: JSONObject) {
        guard object.count >= 1, let first = object.members.first else { return nil }
        switch (first.key, first.value) {
        case ("format", .string(let format)):
            guard object.count == 3, format == Self.format, let userKey = object["userKey"]?.stringValue,
                let numbered = object["numbered"]?.int64Value
            else { return nil }
            self = .header(userKey: userKey, numbered: numbered)
        case ("enqueue", .array(let items)) where object.count == 1:
            var uploads: [SyncQueue.Upload] = []
            for case .object(let item) in items {
                guard let number = item["n"]?.int64Value, let id = item["id"]?.stringValue.flatMap(MessageID.init)
                else { return nil }
                if item["deleted"] == .bool(true) {
                    uploads.append(.init(number: number, item: .delete(id)))
                } else {
                    guard let version = item["version"]?.int64Value, case .object(let body)? = item["body"] else {
                        return nil
                    }
                    uploads.append(.init(number: number, item: .put(id, version: version, body: JSONText(.object(body)))))
                }
            }
            guard uploads.count == items.count else { return nil }
            self = .enqueue(uploads)
        case ("edit", .object(let edit)) where object.count == 1:
            guard let number = edit["n"]?.int64Value, let at = edit["at"]?.stringValue.flatMap(Timestamp.parse),
                case .object(let members)? = edit["members"]
            else { return nil }
            self = .edit(number: number, at: at, members: members.members)
        case ("done", .array(let numbers)) where object.count == 1:
            let parsed = numbers.compactMap(\.int64Value)
            guard parsed.count == numbers.count else { return nil }
            self = .done(parsed)
        case ("editsDone", .object(let members)) where object.count == 1:
            var done: [String: Int64] = [:]
            for member in members.members {
                guard let number = member.value.int64Value else { return nil }
                done[member.key] = number
            }
            self = .editsDone(done)
        default:
            return nil
        }
    }
}

/// The journal file of a state directory: records appended and synced one
/// call at a time, each on its own line with a checksum, rewritten whole (a
/// compaction) once most of it is history. docs/SYNC-STATE.md gives the
/// format and the commit rule.
final class SyncJournal {
    let path: String
    private let userKey: UserKey
    private var handle: FileHandle
    /// The bytes of whole records: the next one is written here.
    private var size: UInt64
    /// Set when a failed write could not be undone: the file may end in a
    /// partial record, and nothing more is written to it until the engine
    /// is opened again (which drops such a tail).
    private var broken: String?

    /// Compaction is considered once the file is this large.
    static let compactionFloor: UInt64 = 64 << 10

    /// Opens (or starts) the journal in `directory` and reads it into a
    /// queue. Throws `local` naming the file when it is damaged: a record
    /// whose checksum does not match, that is not JSON, or that this
    /// version does not write; a header of another user key. A last record
    /// without its line end (the write a crash cut off; it was never
    /// acknowledged) is dropped, by rewriting the file without it.
    static func open(directory: String, userKey: UserKey) throws -> (SyncJournal, SyncQueue) {
        let path = directory + "/journal"
        var queue = SyncQueue()
        let bytes = try Platform.read(path) ?? []
        var start = 0
        var line = 0
        var torn = false
        while start < bytes.count {
            line += 1
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                torn = true
                break
            }
            guard checksumMatches(bytes[start..<end]) else {
                // The last record, its line end on disk but not all of it (a hole a power loss
                // left): a write that never returned, dropped like one cut off.
                if end + 1 == bytes.count, line > 1 {
                    torn = true
                    break
                }
                throw damaged(path, line: line, offset: start, "its checksum does not match, or it is not a record this version writes")
            }
            guard let record = record(bytes[start..<end]) else {
                throw damaged(path, line: line, offset: start, "its checksum does not match, or it is not a record this version writes")
            }
            if line == 1 {
                guard case .header(let key, _) = record else {
                    throw damaged(path, line: 1, offset: 0, "it is not the header (\(SyncRecord.format))")
                }
                guard key == userKey.rawValue else {
                    throw ClientError.local(
                        "the sync state in \(directory) holds the changes of user key \(key), not \(userKey.rawValue):"
                            + " give each user key a state directory of its own")
                }
            } else if case .header = record {
                throw damaged(path, line: line, offset: start, "a second header")
            }
            queue.apply(record)
            start = end + 1
        }
        let journal = SyncJournal(path: path, userKey: userKey, handle: try Platform.openForAppending(path), size: UInt64(start))
        if start == 0 || torn {
            try journal.rewrite(queue)
        }
        return (journal, queue)
    }

    private init(path: String, userKey: UserKey, handle: FileHandle, size: UInt64) {
        self.path = path
        self.userKey = userKey
        self.handle = handle
        self.size = size
    }

    deinit { try? handle.close() }

    /// Whether a line is a checksum, a space and the JSON it is the checksum of.
    private static func checksumMatches(_ line: ArraySlice<UInt8>) -> Bool {
        line.count > 18 && line[line.startIndex + 16] == UInt8(ascii: " ")
            && Array(line.prefix(16)) == checksum(Array(line.dropFirst(17)))
    }

    /// A line's record, when its checksum matches and it is one.
    private static func record(_ line: ArraySlice<UInt8>) -> SyncRecord? {
        guard checksumMatches(line),
            let object = (try? JSONParser.parse(Array(line.dropFirst(17)), maxDepth: JSONParser.storedDocumentMaxDepth))?.objectValue
        else { return nil }
        return SyncRecord(object)
    }

    /// The first 8 bytes of the JSON's SHA-256, as 16 lowercase hex digits.
    private static func checksum(_ json: [UInt8]) -> [UInt8] {
        Array(ASCII.hex(Array(Platform.sha256(json).prefix(8))).utf8)
    }

    private static func line(_ record: SyncRecord) -> [UInt8] {
        let json = record.json
        return checksum(json) + [UInt8(ascii: " ")] + json + [UInt8(ascii: "\n")]
    }

    private static func damaged(_ path: String, line: Int, offset: Int, _ what: String) -> ClientError {
        .local(
            "the sync state file \(path) is damaged at record \(line) (byte \(offset)): \(what). Nothing was sent and the"
                + " file is as it was. Restore it from a backup, or move it aside to start with nothing pending"
                + " (what it held is then not sent)")
    }

    /// Appends `records` in one write and syncs the file: when this returns
    /// they are durable, and only then may the caller act on them.
    func append(_ records: [SyncRecord]) throws {
        if let broken { throw ClientError.local(broken) }
        let bytes = records.flatMap(Self.line)
        do {
            try Platform.append(bytes, to: handle, at: size, path: path)
        } catch let failure as Platform.AppendFailure {
            let what = "cannot write \(path): \(failure.reason)"
            if !failure.intact {
                broken = what + "; the file may end in a partial record, which the engine drops when it is opened again"
            }
            throw ClientError.local(what + "; nothing of this call was recorded, and the queue is as it was")
        }
        size += UInt64(bytes.count)
    }

    /// Rewrites the file as `queue`'s records alone when most of it is
    /// history (acknowledged changes, replaced versions).
    func compactIfDue(_ queue: SyncQueue) throws {
        guard size >= Self.compactionFloor, queue.isEmpty || size > 4 * liveBytes(queue) else { return }
        try rewrite(queue)
    }

    /// What `queue`'s records take, estimated from its bodies.
    private func liveBytes(_ queue: SyncQueue) -> UInt64 {
        var bytes: UInt64 = 64
        for upload in queue.uploads.values {
            if case .put(_, let body) = upload.item.change { bytes += UInt64(body.bytes.count) }
            bytes += 64
        }
        return bytes + UInt64(queue.edits.count * 128)
    }

    /// Replaces the file with `queue`'s records: a temporary file written
    /// and synced, renamed over the journal, the folder synced. A crash
    /// leaves the old journal or the new one, which hold the same queue.
    private func rewrite(_ queue: SyncQueue) throws {
        let bytes = queue.records(userKey: userKey).flatMap(Self.line)
        try Platform.replace(path, with: bytes)
        try? handle.close()
        do {
            handle = try Platform.openForAppending(path)
        } catch {
            broken = "cannot open \(path) again after rewriting it (\(error)); open the engine again"
            throw error
        }
        size = UInt64(bytes.count)
        broken = nil
    }
}

/// One engine at a time per state directory: the lock file's `flock`
/// against other processes, a list of the directories this process holds
/// against a second engine here. Released when the engine is freed, or by
/// the kernel when the process ends.
final class StateDirectoryHold: Sendable {
    let path: String
    private let descriptor: Int32

    /// Holds `path` (a directory that exists, its path resolved); throws
    /// `local`, naming it, when another engine holds it.
    init(_ path: String) throws {
        guard Self.held.claim(path) else {
            throw ClientError.local(
                "the sync state directory \(path) is in use by another SyncEngine in this process: use that engine"
                    + " (one per directory), or let it go before making another")
        }
        let descriptor: Int32?
        do {
            descriptor = try Platform.lock(path + "/lock")
        } catch {
            Self.held.release(path)
            throw error
        }
        guard let descriptor else {
            Self.held.release(path)
            throw ClientError.local(
                "the sync state directory \(path) is in use by another process (a SyncEngine holds \(path)/lock):"
                    + " one engine may use a directory at a time; stop the other, or give this one its own directory")
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        Platform.unlock(descriptor)
        Self.held.release(path)
    }

    /// The directories engines of this process hold.
    private static let held = HeldDirectories()

    private final class HeldDirectories: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: Set<String> = []

        func claim(_ path: String) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            return paths.insert(path).inserted
        }

        func release(_ path: String) {
            lock.lock()
            defer { lock.unlock() }
            paths.remove(path)
        }
    }
}
