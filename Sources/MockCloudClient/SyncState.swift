import Foundation
import MockCloudJSON
import MockCloudWire

/// What a `SyncEngine` holds for the box: the uploads and settings edits not
/// yet acknowledged. Changed only by `apply(_:bodies:)`, from the journal's
/// records when the engine opens and from each new record once it is on
/// disk, so what the engine holds in memory is what a restart would read
/// (docs/SYNC-STATE.md). An upload's body stays in the journal: the queue
/// keeps where it is (`Entry`), and the engine reads a batch's bodies when
/// it sends them, so memory follows the batch, not the queue.
struct SyncQueue {
    /// An upload and its number, which says which of two versions of one id
    /// is the later one to be handed over: a record being written, a round
    /// being sent.
    struct Upload: Equatable, Sendable {
        var number: Int64
        var item: UploadItem
    }

    /// A queued upload as the queue keeps it: its body is the journal's
    /// bytes at `body` (SyncJournal.load reads it).
    struct Entry: Equatable, Sendable {
        var number: Int64
        var id: MessageID
        /// The put's version; nil for a deletion.
        var version: Int64?
        /// Where the put's body is in the journal; nil for a deletion.
        var body: Span?
    }

    /// Bytes of the journal: `count` from `offset`.
    struct Span: Equatable, Sendable {
        var offset: UInt64
        var count: Int
    }

    /// A settings member's edit: its whole new value (`null`: deleted) and when.
    struct Edit: Equatable, Sendable {
        var number: Int64
        var at: Timestamp.Micros
        var value: JSONValue
    }

    /// An outcome that left the queue for good (a refused upload or settings
    /// edit), kept until the app says it has taken it (`SyncEngine.acknowledgeRefusals`).
    struct Refused: Equatable, Sendable {
        enum Change: Equatable, Sendable {
            case upload(UploadItem)
            case edit(at: Timestamp.Micros, members: [JSONMember])
        }
        var number: Int64
        var change: Change
        var status: Int
        var reason: String
    }

    private(set) var edits: [String: Edit] = [:]
    /// Refusals the app has not taken yet, by number.
    private(set) var refused: [Int64: Refused] = [:]
    /// The highest number handed out; the next one is one more.
    private(set) var lastNumber: Int64 = 0
    /// The bytes of the queued bodies.
    private(set) var bodyBytes = 0
    /// The queued uploads in the order they were handed over (by number),
    /// nil where one left the queue, with their numbers beside them (for
    /// `done` records, found by binary search), from `head` on; and each
    /// id's place. About 90 bytes an upload, whatever its body.
    private var entries: [Entry?] = []
    private var numbers: [Int64] = []
    private var head = 0
    private var places: [MessageID: Int] = [:]

    var isEmpty: Bool { places.isEmpty && edits.isEmpty }

    /// The queued uploads by id: `uploads[id]`, `uploads.count`.
    var uploads: Uploads { Uploads(queue: self) }

    private func entry(_ id: MessageID) -> Entry? { places[id].flatMap { entries[$0] } }

    struct Uploads {
        fileprivate let queue: SyncQueue
        subscript(id: MessageID) -> Entry? { queue.entry(id) }
        var count: Int { queue.places.count }
    }

    /// Applies `record`; for `enqueue`, `bodies` says where each put's body
    /// is in the journal (nil for a deletion), one per upload.
    mutating func apply(_ record: SyncRecord, bodies: [Span?] = []) {
        switch record {
        case .header(_, let numbered):
            lastNumber = max(lastNumber, numbered)
        case .enqueue(let uploads):
            add(zip(uploads, bodies).map { upload, body in
                Entry(number: upload.number, id: upload.item.id, version: upload.item.queuedVersion, body: body)
            })
        case .edit(let number, let at, let members):
            lastNumber = max(lastNumber, number)
            for member in members where (edits[member.key]?.at ?? .min) <= at {
                edits[member.key] = Edit(number: number, at: at, value: member.value)
            }
        case .done(let done):
            for number in done {
                guard let place = place(of: number), let entry = entries[place] else { continue }
                remove(entry.id)
            }
            tidy()
        case .editsDone(let members):
            for (name, number) in members where edits[name]?.number == number {
                edits[name] = nil
            }
        case .refused(let refusals):
            for refusal in refusals {
                lastNumber = max(lastNumber, refusal.number)
                refused[refusal.number] = refusal
            }
        case .taken(let numbers):
            for number in numbers { refused[number] = nil }
        }
    }

    /// Adds enqueued uploads, each taking the place of the one queued under
    /// its id when `replaces` says so.
    mutating func add(_ added: [Entry]) {
        for entry in added {
            lastNumber = max(lastNumber, entry.number)
            guard Self.replaces(entry.version, heldVersion: self.entry(entry.id)?.version) else { continue }
            if let place = places[entry.id], entries[place]?.number == entry.number {
                // A record read twice keeps its place.
                bodyBytes += (entry.body?.count ?? 0) - (entries[place]?.body?.count ?? 0)
                entries[place] = entry
                continue
            }
            remove(entry.id)
            if let last = numbers.last, last >= entry.number {
                // Numbers out of order (no journal this version writes has them): put it in its place.
                let place = numbers.partitioningIndex { $0 > entry.number }
                entries.insert(entry, at: place)
                numbers.insert(entry.number, at: place)
                for (k, moved) in entries.enumerated().dropFirst(place) { if let moved { places[moved.id] = k } }
                head = min(head, place)
            } else {
                entries.append(entry)
                numbers.append(entry.number)
                places[entry.id] = entries.count - 1
            }
            bodyBytes += entry.body?.count ?? 0
        }
    }

    private mutating func remove(_ id: MessageID) {
        guard let place = places.removeValue(forKey: id), let old = entries[place] else { return }
        bodyBytes -= old.body?.count ?? 0
        entries[place] = nil
    }

    /// Where the upload numbered `number` is (or was) in `entries`.
    private func place(of number: Int64) -> Int? {
        let place = numbers.partitioningIndex { $0 >= number }
        return place < numbers.count && numbers[place] == number ? place : nil
    }

    /// Moves `head` past the uploads that left, and drops them once they
    /// are most of `entries`.
    private mutating func tidy() {
        while head < entries.count, entries[head] == nil { head += 1 }
        guard entries.count - places.count > places.count + 1024 else { return }
        var kept: [Entry?] = [], keptNumbers: [Int64] = []
        kept.reserveCapacity(places.count)
        keptNumbers.reserveCapacity(places.count)
        for case let entry? in entries[head...] {
            places[entry.id] = kept.count
            kept.append(entry)
            keptNumbers.append(entry.number)
        }
        (entries, numbers, head) = (kept, keptNumbers, 0)
    }

    /// Whether a change of `version` (nil: a deletion) takes the place of
    /// the unsent change of the same id (`heldVersion`: nil when none is
    /// queued or it is a deletion; a put's version otherwise): a deletion
    /// always does, and so does a put, unless the queued one is a put of a
    /// higher version (which the box would keep anyway).
    static func replaces(_ version: Int64?, heldVersion: Int64?) -> Bool {
        guard let version, let held = heldVersion else { return true }
        return version >= held
    }

    /// The uploads in the order they were handed over: O(queue), no sort.
    var uploadsInOrder: [Entry] { first(Int.max, bodyBytes: Int.max) }

    /// The first uploads in the order they were handed over, at most
    /// `count` of them and, past the first, `bodyBytes` of bodies.
    func first(_ count: Int, bodyBytes limit: Int) -> [Entry] {
        var first: [Entry] = []
        var bytes = 0
        for case let entry? in entries[head...] {
            guard first.count < count else { break }
            bytes += entry.body?.count ?? 0
            if bytes > limit, !first.isEmpty { break }
            first.append(entry)
        }
        return first
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, which holds for a
    /// suffix of the array (a binary search); `count` when none does.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

extension UploadItem {
    /// The put's version; nil for a deletion (`SyncQueue.replaces`).
    var queuedVersion: Int64? {
        guard case .put(let version, _) = change else { return nil }
        return version
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
    /// Refusals to keep until the app takes them, each with a number of its own.
    case refused([SyncQueue.Refused])
    /// Refusals the app has taken.
    case taken([Int64])

    static let format = "mockcloud-sync-state 1"

    /// The record's JSON object.
    var json: [UInt8] { encoded().json }

    /// The record's JSON object and, for `enqueue`, where each put's body
    /// is in it (nil for a deletion).
    func encoded() -> (json: [UInt8], bodies: [Range<Int>?]) {
        switch self {
        case .header(let userKey, let numbered):
            return (JSONPrinter.compact(.object(JSONObject([
                JSONMember("format", .string(Self.format)), JSONMember("userKey", .string(userKey)),
                JSONMember("numbered", .number(String(numbered))),
            ]))), [])
        case .enqueue(let uploads):
            var out = Self.enqueueOpening
            var bodies: [Range<Int>?] = []
            for (k, upload) in uploads.enumerated() {
                let body = Self.appendItem(number: upload.number, upload.item.wire, first: k == 0, to: &out)
                bodies.append(body)
            }
            return (out + Self.enqueueClosing, bodies)
        case .edit(let number, let at, let members):
            return (JSONPrinter.compact(.object(JSONObject([JSONMember("edit", .object(JSONObject([
                JSONMember("n", .number(String(number))), JSONMember("at", .string(Timestamp.format(at))),
                JSONMember("members", .object(JSONObject(members))),
            ])))]))), [])
        case .done(let numbers):
            return (JSONPrinter.compact(.object(JSONObject([JSONMember("done", .array(numbers.map { .number(String($0)) }))]))), [])
        case .editsDone(let members):
            let done = members.sorted { $0.key < $1.key }.map { JSONMember($0.key, .number(String($0.value))) }
            return (JSONPrinter.compact(.object(JSONObject([JSONMember("editsDone", .object(JSONObject(done)))]))), [])
        case .refused(let refusals):
            let list = refusals.map { refusal -> JSONValue in
                var members = [JSONMember("n", .number(String(refusal.number))), JSONMember("status", .number(String(refusal.status))),
                               JSONMember("reason", .string(refusal.reason))]
                switch refusal.change {
                case .upload(let item):
                    var fields = [JSONMember("id", .string(item.id.rawValue))]
                    switch item.change {
                    case .put(let version, let body): fields += [JSONMember("version", .number(String(version))), JSONMember("body", body.value)]
                    case .delete: fields.append(JSONMember("deleted", .bool(true)))
                    }
                    members.append(JSONMember("upload", .object(JSONObject(fields))))
                case .edit(let at, let edited):
                    members.append(JSONMember("edit", .object(JSONObject([
                        JSONMember("at", .string(Timestamp.format(at))), JSONMember("members", .object(JSONObject(edited))),
                    ]))))
                }
                return .object(JSONObject(members))
            }
            return (JSONPrinter.compact(.object(JSONObject([JSONMember("refused", .array(list))]))), [])
        case .taken(let numbers):
            return (JSONPrinter.compact(.object(JSONObject([JSONMember("taken", .array(numbers.map { .number(String($0)) }))]))), [])
        }
    }

    static let enqueueOpening = Array(#"{"enqueue": ["#.utf8)
    static let enqueueClosing = Array("]}".utf8)

    /// Appends an enqueue record's item (the bulk request's item encoding,
    /// with the number in front) and returns where its body is in `out`.
    static func appendItem(number: Int64, _ item: BulkRequest.Item, first: Bool, to out: inout [UInt8]) -> Range<Int>? {
        out += Array((first ? #"{"n": "# : #", {"n": "#).utf8)
        ASCII.appendDecimal(Int(number), to: &out)
        out += Array(", ".utf8) + BulkRequest.encode(item).dropFirst()
        guard case .put(_, _, let body) = item else { return nil }
        return (out.count - 1 - body.count)..<(out.count - 1)
    }

    /// An upload as the bulk request's item (`id`, then `version` and `body`, or `deleted`).
    private static func upload(_ item: JSONObject) -> UploadItem? {
        guard let id = item["id"]?.stringValue.flatMap(MessageID.init) else { return nil }
        if item["deleted"] == .bool(true) { return .delete(id) }
        guard let version = item["version"]?.int64Value, case .object(let body)? = item["body"] else { return nil }
        return .put(id, version: version, body: JSONText(.object(body)))
    }

    /// The record a JSON object holds; nil when it is none this version
    /// writes. Not for `enqueue` (its bodies stay in the file:
    /// `SyncJournal.enqueued`).
    init?(_ object: JSONObject) {
        guard object.count >= 1, let first = object.members.first else { return nil }
        switch (first.key, first.value) {
        case ("format", .string(let format)):
            guard object.count == 3, format == Self.format, let userKey = object["userKey"]?.stringValue,
                let numbered = object["numbered"]?.int64Value
            else { return nil }
            self = .header(userKey: userKey, numbered: numbered)
        case ("refused", .array(let items)) where object.count == 1:
            var refusals: [SyncQueue.Refused] = []
            for case .object(let item) in items {
                guard let number = item["n"]?.int64Value, let status = item["status"]?.int64Value,
                    let reason = item["reason"]?.stringValue
                else { return nil }
                let change: SyncQueue.Refused.Change
                if case .object(let upload)? = item["upload"], let parsed = Self.upload(upload) {
                    change = .upload(parsed)
                } else if case .object(let edit)? = item["edit"], let at = edit["at"]?.stringValue.flatMap(Timestamp.parse),
                    case .object(let members)? = edit["members"]
                {
                    change = .edit(at: at, members: members.members)
                } else {
                    return nil
                }
                refusals.append(.init(number: number, change: change, status: Int(status), reason: reason))
            }
            guard refusals.count == items.count else { return nil }
            self = .refused(refusals)
        case ("taken", .array(let numbers)) where object.count == 1:
            let parsed = numbers.compactMap(\.int64Value)
            guard parsed.count == numbers.count else { return nil }
            self = .taken(parsed)
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
/// compaction) once most of it is history. It holds the queue the records
/// make. docs/SYNC-STATE.md gives the format and the commit rule.
final class SyncJournal {
    let path: String
    private let userKey: UserKey
    private var handle: FileHandle
    /// The bytes of whole records: the next one is written here.
    private(set) var size: UInt64
    /// Set when a failed write could not be undone: the file may end in a
    /// partial record, and nothing more is written to it until the engine
    /// is opened again (which drops such a tail).
    private var broken: String?
    /// What the records make.
    private(set) var queue: SyncQueue

    /// Compaction is considered once the file is over this size.
    static let compactionFloor: UInt64 = 64 << 10
    /// A compaction writes queued uploads in records of at most this many
    /// uploads and (past the first) body bytes, so that neither it nor a
    /// later open holds more than one such record.
    static let compactedRecordItems = 1000
    static let compactedRecordBytes = 1 << 20

    /// `entries` in the runs a rewritten file holds a record each: at most
    /// `compactedRecordItems`, and their bodies at most
    /// `compactedRecordBytes` (one larger body alone).
    static func recordRuns(_ entries: [SyncQueue.Entry]) -> [ArraySlice<SyncQueue.Entry>] {
        var runs: [ArraySlice<SyncQueue.Entry>] = []
        var start = 0
        while start < entries.count {
            var end = start
            var bytes = 0
            while end < entries.count, end - start < compactedRecordItems,
                end == start || bytes + (entries[end].body?.count ?? 0) <= compactedRecordBytes
            {
                bytes += entries[end].body?.count ?? 0
                end += 1
            }
            runs.append(entries[start..<end])
            start = end
        }
        return runs
    }

    /// After a rewrite renamed a new file over `path`: `handle` closed and
    /// opened on the new file. When it cannot be, `broken` says so (the
    /// file's owner refuses to go on until opened again) and the error is
    /// thrown.
    static func reopen(_ handle: inout FileHandle, _ path: String, after rewriting: String, broken: inout String?) throws {
        try? handle.close()
        do {
            handle = try Platform.openForUpdating(path)
        } catch {
            broken = "cannot open \(path) again after \(rewriting) it (\(error)); open the engine again"
            throw error
        }
    }

    /// Opens (or starts) the journal in `directory` and reads it into a
    /// queue. Throws `local` naming the file when it is damaged: a record
    /// whose checksum does not match, that is not JSON, or that this
    /// version does not write; a header of another user key. A last record
    /// that does not read (without its line end, or with a checksum that
    /// does not match: a write a crash or a power loss cut off; it was
    /// never acknowledged) is dropped, by rewriting the file without it.
    /// Temporary files a crash left behind are removed, and a journal that
    /// is mostly history is compacted.
    static func open(directory: String, userKey: UserKey) throws -> SyncJournal {
        let path = directory + "/journal"
        Platform.removeLeftovers(of: path)
        let handle = try notWritable { try Platform.openForUpdating(path) }
        var queue = SyncQueue()
        var reader = try LineReader(handle, path: path)
        var line = 0
        var whole: UInt64 = 0
        var torn = false
        while let (start, bytes, ended) = try reader.next() {
            line += 1
            guard ended, Self.checksumMatches(bytes) else {
                // The last record, cut short or holed: a write that never returned.
                if start + UInt64(bytes.count) + (ended ? 1 : 0) == reader.fileSize, line > 1 || !ended {
                    torn = true
                    break
                }
                throw damaged(path, line: line, offset: start, "its checksum does not match, or it is not a record this version writes")
            }
            let json = bytes.dropFirst(17)
            if json.starts(with: SyncRecord.enqueueOpening), line > 1 {
                guard let entries = enqueued(json, at: start + 17) else {
                    throw damaged(path, line: line, offset: start, "its checksum does not match, or it is not a record this version writes")
                }
                queue.add(entries)
            } else {
                guard let object = (try? JSONParser.parse(Array(json), maxDepth: JSONParser.storedDocumentMaxDepth))?.objectValue,
                    let record = SyncRecord(object)
                else {
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
            }
            whole = start + UInt64(bytes.count) + 1
        }
        let journal = SyncJournal(path: path, userKey: userKey, handle: handle, size: whole, queue: queue)
        if whole == 0 || torn {
            try notWritable { try journal.rewrite() }
        } else {
            try? journal.compactIfDue()
        }
        return journal
    }

    private init(path: String, userKey: UserKey, handle: FileHandle, size: UInt64, queue: SyncQueue) {
        self.path = path
        self.userKey = userKey
        self.handle = handle
        self.size = size
        self.queue = queue
    }

    deinit { try? handle.close() }

    /// Whether a line is a checksum, a space and the JSON it is the checksum of.
    static func checksumMatches(_ line: ArraySlice<UInt8>) -> Bool {
        line.count > 18 && line[line.startIndex + 16] == UInt8(ascii: " ")
            && Array(line.prefix(16)) == checksum(Array(line.dropFirst(17)))
    }

    /// The first 8 bytes of the JSON's SHA-256, as 16 lowercase hex digits.
    static func checksum(_ json: [UInt8]) -> [UInt8] {
        Array(ASCII.hex(Array(Platform.sha256(json).prefix(8))).utf8)
    }

    static func line(_ json: [UInt8]) -> [UInt8] {
        checksum(json) + [UInt8(ascii: " ")] + json + [UInt8(ascii: "\n")]
    }

    private static func damaged(_ path: String, line: Int, offset: UInt64, _ what: String) -> ClientError {
        .stateDamaged(
            "the sync state file \(path) is damaged at record \(line) (byte \(offset)): \(what). Nothing was sent and the"
                + " file is as it was. Restore it from a backup, or move it aside to start with nothing pending"
                + " (what it held is then not sent)")
    }

    /// The uploads of an enqueue record's JSON (whose checksum matched),
    /// found at `offset` in the file, with where each body is: the bodies
    /// are stepped over, not parsed. Nil when it is not such a record.
    static func enqueued(_ json: ArraySlice<UInt8>, at offset: UInt64) -> [SyncQueue.Entry]? {
        var scan = JSONScan(json)
        guard scan.take(SyncRecord.enqueueOpening) else { return nil }
        var entries: [SyncQueue.Entry] = []
        scan.skipWhitespace()
        if !scan.take(UInt8(ascii: "]")) {
            repeat {
                guard let entry = enqueuedItem(&scan, at: offset) else { return nil }
                entries.append(entry)
            } while scan.take(UInt8(ascii: ","))
            guard scan.take(UInt8(ascii: "]")) else { return nil }
        }
        guard scan.take(UInt8(ascii: "}")), scan.atEnd else { return nil }
        return entries
    }

    private static func enqueuedItem(_ scan: inout JSONScan, at offset: UInt64) -> SyncQueue.Entry? {
        guard scan.take(UInt8(ascii: "{")) else { return nil }
        var number: Int64?, id: MessageID?, version: Int64?, deleted = false
        var body: Range<Int>?
        repeat {
            guard let key = scan.string(), scan.take(UInt8(ascii: ":")), let value = scan.value() else { return nil }
            let text = scan.text(value)
            switch key {
            case "n": number = Int64(text)
            case "id": id = text.count > 2 && text.hasPrefix("\"") ? MessageID(String(text.dropFirst().dropLast())) : nil
            case "version": version = Int64(text)
            case "deleted": deleted = text == "true"
            case "body":
                guard scan.bytes[value.lowerBound] == UInt8(ascii: "{") else { return nil }
                body = value
            default: return nil
            }
        } while scan.take(UInt8(ascii: ","))
        guard scan.take(UInt8(ascii: "}")), let number, let id else { return nil }
        if deleted { return SyncQueue.Entry(number: number, id: id, version: nil, body: nil) }
        guard let version, let body else { return nil }
        let start = offset + UInt64(body.lowerBound - scan.bytes.startIndex)
        return SyncQueue.Entry(number: number, id: id, version: version, body: SyncQueue.Span(offset: start, count: body.count))
    }

    /// Appends `records` in one write and syncs the file, then applies them
    /// to the queue: when this returns they are durable (all of them, or
    /// none), and only then may the caller act on them. Then compacts the
    /// journal if it is due.
    func record(_ records: [SyncRecord]) throws {
        if let broken { throw ClientError.stateNotWritable(broken) }
        let encoded = records.map { $0.encoded() }
        let lines = encoded.map { Self.line($0.json) }
        let bytes = Array(lines.joined())
        do {
            try Platform.append(bytes, to: handle, at: size, path: path)
        } catch let failure as Platform.AppendFailure {
            let what = "cannot write \(path): \(failure.reason)"
            if !failure.intact {
                broken = what + "; the file may end in a partial record, which the engine drops when it is opened again:"
                    + " free space on the device (or make the directory writable) and open the engine again"
            }
            throw ClientError.stateNotWritable(
                what + "; nothing of this call was recorded, and the queue is as it was: free space on the device"
                    + " (or make the directory writable) and call again")
        }
        var lineStart = size
        for ((record, (_, bodies)), line) in zip(zip(records, encoded), lines) {
            let base = lineStart + 17
            queue.apply(record, bodies: bodies.map { $0.map { SyncQueue.Span(offset: base + UInt64($0.lowerBound), count: $0.count) } })
            lineStart += UInt64(line.count)
        }
        size += UInt64(bytes.count)
        try? compactIfDue()
    }

    /// `record` alone (`record(_:)` of one).
    func record(_ record: SyncRecord) throws { try self.record([record]) }

    /// The uploads of `entries`, their bodies read from the journal.
    func load(_ entries: [SyncQueue.Entry]) throws -> [SyncQueue.Upload] {
        try Self.load(entries, from: handle, path: path)
    }

    /// The uploads of `entries`, their bodies read from the file `path` open as `handle`.
    static func load(_ entries: [SyncQueue.Entry], from handle: FileHandle, path: String) throws -> [SyncQueue.Upload] {
        try entries.map { entry in
            guard let version = entry.version, let span = entry.body else {
                return SyncQueue.Upload(number: entry.number, item: .delete(entry.id))
            }
            let bytes = try Platform.read(handle, at: span.offset, count: span.count, path: path)
            guard let body = try? JSONText(validating: bytes) else {
                throw damaged(path, line: 0, offset: span.offset, "the body of \(entry.id) is not the JSON object it was")
            }
            return SyncQueue.Upload(number: entry.number, item: .put(entry.id, version: version, body: body))
        }
    }

    /// Rewrites the file as the queue's records alone when it is over the
    /// floor and more than 4 times what they take (the rest is history:
    /// acknowledged changes, replaced versions).
    func compactIfDue() throws {
        guard size > Self.compactionFloor, size > 4 * liveBytes else { return }
        try Self.notWritable { try rewrite() }
    }

    /// `body`, its `local` failures (a file not written, not made) made
    /// `stateNotWritable`.
    static func notWritable<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ClientError where error.code == .local {
            throw ClientError.stateNotWritable(
                error.detail + ": free space on the device (or make the directory writable) and try again")
        }
    }

    /// What the queue's records take, estimated from its bodies.
    private var liveBytes: UInt64 {
        UInt64(64 + queue.bodyBytes + 64 * queue.uploads.count + 128 * queue.edits.count + 512 * queue.refused.count)
    }

    /// Replaces the file with the queue's records: a temporary file written
    /// and synced, renamed over the journal, the folder synced. A crash
    /// leaves the old journal or the new one, which hold the same queue.
    /// The uploads go in records of a bounded size, their bodies copied
    /// from the old file a record at a time.
    private func rewrite() throws {
        var rebuilt = SyncQueue()
        var written: UInt64 = 0
        try Platform.replace(path) { write in
            /// Writes a record's line; returns where its JSON begins.
            func put(_ json: [UInt8]) throws -> UInt64 {
                let line = Self.line(json)
                try write(line)
                defer { written += UInt64(line.count) }
                return written + 17
            }
            let header = SyncRecord.header(userKey: userKey.rawValue, numbered: queue.lastNumber)
            _ = try put(header.json)
            rebuilt.apply(header)
            for batch in Self.recordRuns(queue.uploadsInOrder) {
                var json = SyncRecord.enqueueOpening
                var bodies: [Range<Int>?] = []
                for entry in batch {
                    var item = BulkRequest.Item.delete(entry.id)
                    if let version = entry.version, let span = entry.body {
                        item = .put(entry.id, version: version, body: try Platform.read(handle, at: span.offset, count: span.count, path: path))
                    }
                    bodies.append(SyncRecord.appendItem(number: entry.number, item, first: bodies.isEmpty, to: &json))
                }
                let at = try put(json + SyncRecord.enqueueClosing)
                rebuilt.add(zip(batch, bodies).map { entry, body in
                    var moved = entry
                    moved.body = body.map { SyncQueue.Span(offset: at + UInt64($0.lowerBound), count: $0.count) }
                    return moved
                })
            }
            let byEdit = Dictionary(grouping: queue.edits) { $0.value.number }
            for number in byEdit.keys.sorted() {
                let members = byEdit[number]!.sorted { $0.key < $1.key }
                let record = SyncRecord.edit(number: number, at: members[0].value.at, members: members.map { JSONMember($0.key, $0.value.value) })
                _ = try put(record.json)
                rebuilt.apply(record)
            }
            if !queue.refused.isEmpty {
                let record = SyncRecord.refused(queue.refused.values.sorted { $0.number < $1.number })
                _ = try put(record.json)
                rebuilt.apply(record)
            }
        }
        try Self.reopen(&handle, path, after: "rewriting", broken: &broken)
        size = written
        queue = rebuilt
        broken = nil
    }
}

/// The journal's lines, read a chunk at a time: the memory it takes is one
/// chunk or the longest line.
struct LineReader {
    let handle: FileHandle
    let path: String
    let fileSize: UInt64
    private var buffer: [UInt8] = []
    /// Where `buffer` begins in the file, how much of it was returned, and
    /// how far the file was read.
    private var bufferOffset: UInt64 = 0
    private var consumed = 0
    private var readTo: UInt64 = 0

    init(_ handle: FileHandle, path: String) throws {
        self.handle = handle
        self.path = path
        fileSize = try Platform.size(of: handle, path: path)
    }

    /// The next line: where it begins, its bytes without the line end, and
    /// whether it had one (only the file's last line may not).
    mutating func next() throws -> (start: UInt64, bytes: ArraySlice<UInt8>, ended: Bool)? {
        var searched = consumed
        while true {
            if let end = buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { consumed = end + 1 }
                return (bufferOffset + UInt64(consumed), buffer[consumed..<end], true)
            }
            guard readTo < fileSize else {
                guard consumed < buffer.count else { return nil }
                defer { consumed = buffer.count }
                return (bufferOffset + UInt64(consumed), buffer[consumed...], false)
            }
            buffer.removeFirst(consumed)
            bufferOffset += UInt64(consumed)
            consumed = 0
            searched = buffer.count
            let chunk = try Platform.read(handle, at: readTo, count: Int(min(1 << 20, fileSize - readTo)), path: path)
            readTo = chunk.isEmpty ? fileSize : readTo + UInt64(chunk.count)
            buffer += chunk
        }
    }
}

/// Steps through JSON the journal wrote (its checksum matched) without
/// building values: where each value is, for a record whose bodies stay in
/// the file. A body is checked as JSON when it is read to be sent.
struct JSONScan {
    let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    var atEnd: Bool { index == bytes.endIndex }

    mutating func skipWhitespace() {
        while index < bytes.endIndex, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    /// Steps over `byte` (after whitespace) when it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.endIndex, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Steps over `literal` when the bytes begin with it.
    mutating func take(_ literal: [UInt8]) -> Bool {
        guard bytes[index...].starts(with: literal) else { return false }
        index += literal.count
        return true
    }

    /// A string without escapes (a member name), its quotes removed.
    mutating func string() -> String? {
        guard let extent = value(), bytes[extent.lowerBound] == UInt8(ascii: "\""),
            !bytes[extent].contains(UInt8(ascii: "\\"))
        else { return nil }
        return String(decoding: bytes[extent].dropFirst().dropLast(), as: UTF8.self)
    }

    /// The bytes of a value, as text.
    func text(_ extent: Range<Int>) -> String { String(decoding: bytes[extent], as: UTF8.self) }

    /// Steps over the next value; returns where it is.
    mutating func value() -> Range<Int>? {
        skipWhitespace()
        let start = index
        guard index < bytes.endIndex else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            guard skipString() else { return nil }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            repeat {
                guard index < bytes.endIndex else { return nil }
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard skipString() else { return nil }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                default: break
                }
                index += 1
            } while depth > 0
        default:
            while index < bytes.endIndex, !Self.isWhitespace(bytes[index]),
                ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]")].contains(bytes[index])
            {
                index += 1
            }
            guard index > start else { return nil }
        }
        return start..<index
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func skipString() -> Bool {
        index += 1
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return true
            case UInt8(ascii: "\\"): index += 2
            default: index += 1
            }
        }
        return false
    }
}

/// One engine at a time per state directory: the lock file's `flock`
/// against other processes, a list of the directories this process holds
/// against a second engine here. Released when the engine is freed, or by
/// the kernel when the process ends.
final class StateDirectoryHold: @unchecked Sendable {
    let path: String
    private let lock = NSLock()
    /// The lock file's descriptor, until released.
    private var descriptor: Int32?

    /// Holds `path` (a directory that exists, its path resolved); throws
    /// `local`, naming it, when another engine holds it.
    init(_ path: String) throws {
        guard Self.held.claim(path) else {
            throw ClientError.stateInUse(
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
            throw ClientError.stateInUse(
                "the sync state directory \(path) is in use by another process (a SyncEngine holds \(path)/lock):"
                    + " one engine may use a directory at a time; stop the other, or give this one its own directory")
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit { release() }

    /// Lets the directory go (`SyncEngine.close()`): another engine may
    /// hold it at once. Once; later calls do nothing.
    func release() {
        lock.lock()
        defer { lock.unlock() }
        guard let descriptor else { return }
        Platform.unlock(descriptor)
        Self.held.release(path)
        self.descriptor = nil
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

extension SyncEngine {
    /// How the engine keeps its state directory on Apple platforms
    /// (docs/SYNC-STATE.md, "On Apple platforms"); elsewhere the directory
    /// is 0700 and its files 0600, and these are not used.
    public struct StateOptions: Sendable, Hashable {
        /// The Data Protection class of the directory and its files.
        public var dataProtection: DataProtection
        /// Whether device backups (iCloud, a computer's) leave the directory out.
        public var excludedFromBackup: Bool

        /// The defaults: readable after the first unlock since boot (an app
        /// launched in the background while the phone is locked can open
        /// it), and left out of backups (a restored queue would send old
        /// changes again, from another device).
        public init(dataProtection: DataProtection = .completeUntilFirstUserAuthentication, excludedFromBackup: Bool = true) {
            self.dataProtection = dataProtection
            self.excludedFromBackup = excludedFromBackup
        }

        /// A Data Protection class (Foundation's `FileProtectionType`).
        public struct DataProtection: Sendable, Hashable, CustomStringConvertible {
            public let description: String
            private init(_ name: String) { description = name }

            /// Readable only while the phone is unlocked: an engine cannot
            /// open while it is locked (a background launch then fails).
            public static let complete = DataProtection("complete")
            /// Files open before the phone locked stay readable; new ones
            /// can be made while it is locked.
            public static let completeUnlessOpen = DataProtection("completeUnlessOpen")
            /// Readable once the phone was unlocked after it started: the default.
            public static let completeUntilFirstUserAuthentication = DataProtection("completeUntilFirstUserAuthentication")
            /// No Data Protection beyond the device's encryption.
            public static let none = DataProtection("none")

            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            var type: FileProtectionType {
                switch self {
                case .complete: return .complete
                case .completeUnlessOpen: return .completeUnlessOpen
                case .none: return .none
                default: return .completeUntilFirstUserAuthentication
                }
            }
            #endif
        }

        /// Makes `directory` (0700, with the folders above it) when it is
        /// absent, the new names synced in their folders, and gives it and
        /// its files these options.
        func prepare(_ directory: URL) throws {
            let path = directory.path
            var absent: [String] = []
            var ancestor = path
            while !ancestor.isEmpty, ancestor != "/", !FileManager.default.fileExists(atPath: ancestor) {
                absent.append(ancestor)
                ancestor = (ancestor as NSString).deletingLastPathComponent
            }
            do {
                try FileManager.default.createDirectory(
                    at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ClientError.stateNotWritable(
                    "cannot create the sync state directory \(path): \(error.localizedDescription); make its folder writable,"
                        + " or give the engine another directory")
            }
            for created in absent.reversed() {
                Platform.syncFolder((created as NSString).deletingLastPathComponent)
            }
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            for name in ["", "/journal", "/sent", "/lock"] where name.isEmpty || FileManager.default.fileExists(atPath: path + name) {
                do {
                    try FileManager.default.setAttributes([.protectionKey: dataProtection.type], ofItemAtPath: path + name)
                } catch {
                    throw ClientError.local("cannot set the Data Protection class of \(path + name): \(error.localizedDescription)")
                }
            }
            #endif
            #if canImport(Darwin)
            var url = directory
            var values = URLResourceValues()
            values.isExcludedFromBackup = excludedFromBackup
            do {
                try url.setResourceValues(values)
            } catch {
                throw ClientError.local("cannot mark \(path) as excluded from backups or not: \(error.localizedDescription)")
            }
            #endif
        }
    }
}
