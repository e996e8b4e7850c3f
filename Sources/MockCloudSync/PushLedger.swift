import MockCloudClient
import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// The push's memory in DIR (the ack record and the anchor) and the one
/// pass that `push` makes once and `push --watch` makes each round: look at
/// files, decide what the box has not acknowledged, send it in bulk, record
/// each acknowledgement.
struct PushLedger {
    let client: BoxClient
    let folder: Folder
    let deleteMissing: Bool
    let anchors: FileAnchorStore
    /// Held while the push runs: a second push on the folder is refused.
    let lock: FolderLock
    /// What the box acknowledged (`.mockcloud-sync-pushed`).
    let log: AckLog
    /// The anchor is missing, or older than writes this push made.
    private(set) var anchorIsStale: Bool

    /// Which files a pass looks at.
    enum Scope: Equatable {
        /// Every file, and (with `--delete`) every acknowledged id without one.
        case everything
        /// These file names (`<id>.json`): each one there, and each one gone.
        /// A `quiet` one was only touched (`FolderChanges.Change.touched`):
        /// when it does not read, it is not done yet, and no problem.
        case names(Set<String>, quiet: Set<String> = [])

        static let nothing = Scope.names([])

        /// What a watch reported: everything after lost events.
        init(_ changes: FolderChanges) {
            self = changes.overflowed ? .everything
                : .names(Set(changes.names.keys), quiet: Set(changes.names.filter { $0.value == .touched }.keys))
        }

        mutating func merge(_ other: Scope) {
            if case .names(let mine, let myQuiet) = self, case .names(let theirs, let theirQuiet) = other {
                // A name reported whole by either is looked at as whole.
                let loud = mine.subtracting(myQuiet).union(theirs.subtracting(theirQuiet))
                self = .names(mine.union(theirs), quiet: myQuiet.union(theirQuiet).subtracting(loud))
            } else {
                self = .everything
            }
        }
    }

    /// Takes the folder's lock (`FolderBusy` when another push holds it) and
    /// reads its record.
    init(client: BoxClient, directory: String, deleteMissing: Bool) throws {
        lock = try FolderLock(directory)
        self.client = client
        folder = Folder(path: directory)
        self.deleteMissing = deleteMissing
        anchors = FileAnchorStore(directory: directory, name: Push.anchorName)
        log = try AckLog(directory: directory, name: Push.stateName)
        // The log says whether the anchor came after its last acknowledgement.
        anchorIsStale = try anchors.load() == nil || (!log.acks.isEmpty && !log.anchored)
    }

    /// Asks the box, from the anchor the last push kept, whether it still
    /// holds what it acknowledged. When it cannot answer from it, its 410
    /// says why (docs/API.md §4):
    /// - `compacted`: routine compaction dropped deletions after it. The
    ///   inbox is the same one and still holds what it acknowledged: the
    ///   record stands, and the anchor is renewed by reading the feed again.
    /// - `replaced` (restored from a backup, or rebuilt), `ahead` (put back
    ///   from an older copy), or no reason (an older server):
    ///   acknowledgements may have been lost with it, so the record is
    ///   dropped and every file is sent again (unchanged ones answer 200 and
    ///   change nothing).
    mutating func recover() async throws -> Recovery {
        guard !log.acks.isEmpty, case .gone(let reason) = try await client.catchUp(from: try anchors.load()) else {
            return .none
        }
        try anchors.save(nil)  // renewed by a full read
        anchorIsStale = true
        if reason == .compacted { return .reread }
        try forgetStored()
        return .resent(reason.flatMap { AnchorGone(rawValue: $0.description) })
    }

    /// The box may have lost what it acknowledged: every file is to be sent
    /// again, and each deletion made again.
    private func forgetStored() throws(ClientError) {
        try log.replace(with: log.acks.compactMapValues { ack in
            if case .stored = ack { return nil }
            return .restored
        })
    }

    /// What to send for `scope`, all at once (a pass sends it a chunk at a
    /// time: `pass`): each file whose version and body the box has not
    /// acknowledged, and (with `--delete`) each acknowledged id whose file
    /// is gone. A file that cannot be read or holds no JSON object is a
    /// problem, never an item: it is looked at again when it changes.
    func plan(_ scope: Scope) throws(ClientError) -> PushRound {
        var round = PushRound()
        let look = try Look(scope, folder)
        var gone: [MessageID] = []
        _ = plan(look, from: 0, into: &round, gone: &gone, limit: .max)
        planDeletions(look, gone, into: &round)
        return round
    }

    /// Sends what `scope` holds that the box has not acknowledged, reading
    /// the files a chunk at a time (what two bulk requests carry), so that
    /// memory follows the chunk, not the folder; then the deletions. The
    /// round's items are those of the last chunk; its counts are the
    /// pass's. `afterEach` learns of each bulk request once it is recorded.
    mutating func pass(_ scope: Scope, afterEach: (PushBatch) -> Void) async throws -> PushRound {
        var round = PushRound()
        let look = try Look(scope, folder)
        let limits = client.configuration.limits, inFlight = client.configuration.uploadsInFlight
        let chunk = Chunk(items: limits.maxItems * inFlight, bytes: limits.maxRequestBytes * inFlight)
        var gone: [MessageID] = []
        var next = plan(look, from: 0, into: &round, gone: &gone, limit: chunk)
        while next < look.names.count {
            try await send(&round, afterEach: afterEach)
            next = plan(look, from: next, into: &round, gone: &gone, limit: chunk)
        }
        // The deletions go with the last chunk.
        planDeletions(look, gone, into: &round)
        try await send(&round, afterEach: afterEach)
        return round
    }

    /// The names a pass looks at.
    struct Look {
        let names: [String]
        /// Names only touched (`Scope.names`' `quiet`).
        let quiet: Set<String>
        /// Every file: an acknowledged id without one is gone.
        let everything: Bool

        init(_ scope: Scope, _ folder: Folder) throws(ClientError) {
            switch scope {
            case .everything: (names, quiet, everything) = (try folder.jsonFiles(), [], true)
            case .names(let some, let touched): (names, quiet, everything) = (some.sorted(), touched, false)
            }
        }
    }

    /// How much a chunk of a pass reads before it is sent.
    struct Chunk {
        var items: Int
        var bytes: Int
        static let max = Chunk(items: .max, bytes: .max)
    }

    /// Reads `look.names` from `start` into `round.items` until `limit` is
    /// reached; the index of the first name not read.
    private func plan(_ look: Look, from start: Int, into round: inout PushRound, gone: inout [MessageID], limit: Chunk) -> Int {
        var bytes = 0
        var index = start
        while index < look.names.count, round.items.count < limit.items, bytes < limit.bytes {
            let name = look.names[index]
            index += 1
            guard let id = MessageID(String(name.dropLast(5))) else {
                round.tally.problems.append("\(name): the name is not a message id (^[A-Za-z0-9._:-]{1,200}$ before .json)")
                continue
            }
            let body: JSONText
            let version: Int64
            do {
                guard let read = try folder.readIfPresent(name) else {
                    gone.append(id)
                    continue
                }
                round.files += 1
                body = try JSONText(validating: read)
                version = try body.version(member: "syncVersion") ?? 0
            } catch {
                // A touched file that does not read is not whole yet: its close reports it.
                if !look.quiet.contains(name) { round.tally.problems.append("\(name): \(error)") }
                continue
            }
            let digest = Digest(hex: body.sha256)!
            if log.acks[id] == .stored(version: version, digest: digest) {
                round.unchanged += 1
                continue
            }
            round.digests[id] = digest
            round.items.append(.put(id, version: version, body: body))
            bytes += body.bytes.count
        }
        return index
    }

    /// With `--delete`, each id gone that the box may hold becomes a
    /// deletion: for every file, each acknowledged id without a file in the
    /// folder; else the names looked at whose file was gone.
    private func planDeletions(_ look: Look, _ gone: [MessageID], into round: inout PushRound) {
        guard deleteMissing else { return }
        var ids = gone
        if look.everything {
            let listed = Set(look.names.lazy.compactMap { MessageID(String($0.dropLast(5))) })
            ids += log.acks.keys.filter { !listed.contains($0) }
        }
        for id in Set(ids).sorted() where log.acks[id].map(Self.mayBeHeld) == true { round.items.append(.delete(id)) }
    }

    /// Sends the round's items as bulk requests and records each item the
    /// box acknowledged, after each request's answer; `afterEach` learns of
    /// each request once it is recorded. Throws when a request fails as a
    /// whole after every retry (`unavailable`): what earlier requests
    /// carried is recorded.
    mutating func send(_ round: inout PushRound, afterEach: (PushBatch) -> Void) async throws {
        let items = round.items
        guard !items.isEmpty else { return }
        defer {
            round.items = []
            round.digests = [:]
        }
        anchorIsStale = true
        _ = try await client.upload(items) { range, outcomes in
            var batch = PushBatch(range: range, ids: items[range].map(\.id), tally: PushTally(sent: range.count))
            var acks: [(MessageID, AckLog.Ack)] = []
            for (item, outcome) in zip(items[range], outcomes) {
                if let ack = Self.ack(item, outcome, digest: round.digests[item.id], in: &batch.tally) { acks.append((item.id, ack)) }
            }
            try log.record(acks)
            round.tally.add(batch.tally)
            afterEach(batch)
        }
    }

    /// True when the box may hold the id: a file removed since is deleted (`--delete`).
    private static func mayBeHeld(_ ack: AckLog.Ack) -> Bool { ack != .deleted }

    /// One item's outcome into `tally`; what the log is to record of it.
    private static func ack(_ item: UploadItem, _ outcome: UploadOutcome, digest: Digest?, in tally: inout PushTally) -> AckLog.Ack? {
        switch (item.change, outcome) {
        case (.put(let version, _), .stored):
            tally.stored += 1
            return digest.map { AckLog.Ack.stored(version: version, digest: $0) }
        case (.delete, .deleted):
            tally.deleted += 1
            return .deleted
        case (_, .conflict(let current)):
            tally.conflicts += 1
            tally.problems.append("\(item.id).json: the server holds version \(current.version), newer than this file's")
        case (_, .rejected(let status, let error)):
            tally.problems.append("\(item.id).json: refused (\(status)): \(error)")
        default:
            break
        }
        return nil
    }

    /// Keeps where the feed ends now, after this push's writes, so that the
    /// next `recover` can tell whether the box lost them. False when the
    /// box's inbox was replaced since the last anchor (a restore while the
    /// push ran): what it acknowledged may be gone too, so the record is
    /// dropped and everything is to be sent again.
    mutating func renewAnchor() async throws -> Bool {
        switch try await client.catchUp(from: try anchors.load()) {
        case .end(let anchor):
            try anchors.save(anchor)
        case .gone(.compacted):
            guard case .end(let anchor) = try await client.catchUp(from: nil) else { return true }
            try anchors.save(anchor)
        case .gone:
            try forgetStored()
            try anchors.save(nil)
            return false
        }
        try log.markAnchored()
        anchorIsStale = false
        return true
    }
}

/// What the anchor kept from the last push told, when the server could not
/// answer from it.
enum Recovery: Equatable {
    /// It answered (or there was nothing to check).
    case none
    /// 410 `compacted`: the feed read again for a new anchor, nothing resent.
    case reread
    /// 410 for another reason (nil: none given): everything sent again.
    case resent(AnchorGone?)

    var resent: Bool {
        if case .resent = self { return true }
        return false
    }

    /// The reason the server gave.
    var reason: AnchorGone? {
        switch self {
        case .none: return nil
        case .reread: return .compacted
        case .resent(let reason): return reason
        }
    }

    /// What happened, for the summary line.
    var note: String { sentence.map { " (" + $0 + ")" } ?? "" }

    /// What happened, in words; nil when the anchor answered.
    var sentence: String? {
        switch self {
        case .none: return nil
        case .reread: return "the server compacted its feed past the last push's anchor: read the feed again, nothing sent again"
        case .resent(.replaced?): return "the server's inbox was restored from a backup or rebuilt: everything sent again"
        case .resent(.ahead?): return "the server lost writes it had acknowledged: everything sent again"
        case .resent: return "the server cannot answer from the last push's anchor: everything sent again"
        }
    }
}
