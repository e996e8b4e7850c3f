import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// `push DIR`: every `<id>.json` in DIR becomes the message `<id>`.
///
/// - The body is the file's JSON object, sent in its compact form (member
///   order and number text kept).
/// - The version is the object's top-level `syncVersion` member (a
///   non-negative integer of at most 18 digits, as in HealthKit samples);
///   without one it is 0, and a changed body at the same version still
///   replaces the stored one (docs/API.md §4).
/// - `.mockcloud-sync-pushed` in DIR records, per id, the version and the
///   SHA-256 of the compact body the server acknowledged (200/201), after
///   each bulk request. A file whose version and digest are recorded is not
///   sent again, so a re-run sends nothing new; an interrupted run resumes
///   where the acknowledgements stopped.
/// - With `--delete`, a recorded id whose file is gone is deleted on the server.
/// - `.mockcloud-sync-push-anchor` is where the feed ended after the last
///   push (`catchUp`). When the server cannot answer from it, its 410 says
///   why (docs/API.md §4):
///   - `compacted`: routine compaction dropped deletions after it. The
///     inbox is the same one and still holds what it acknowledged: the
///     record stands, and the anchor is renewed by reading the feed again.
///   - `replaced` (restored from a backup, or rebuilt), `ahead` (put back
///     from an older copy), or no reason (an older server):
///     acknowledgements may have been lost with it, so the record is
///     dropped and every file is sent again (unchanged ones answer 200 and
///     change nothing).
struct Push {
    let client: BoxClient
    let directory: String
    let deleteMissing: Bool
    static let stateName = ".mockcloud-sync-pushed"
    static let anchorName = ".mockcloud-sync-push-anchor"

    func run(_ output: inout Output) async throws -> Int32 {
        let folder = Folder(path: directory)
        var state = try folder.readState(Self.stateName)
        let anchors = FileAnchorStore(directory: directory, name: Self.anchorName)
        var recovery = Recovery.none
        if !state.isEmpty, case .gone(let reason) = try await client.catchUp(from: try anchors.load()) {
            try anchors.save(nil)  // renewed by a full read below
            if reason == .compacted {
                recovery = .reread
            } else {
                recovery = .resent(reason)
                state = [:]
                try folder.writeState(Self.stateName, state)
            }
        }
        var items: [UploadItem] = []
        var problems: [String] = []
        var digests: [MessageID: String] = [:]
        var unchanged = 0
        var present: Set<MessageID> = []
        let names = try folder.jsonFiles()
        for name in names {
            guard let id = MessageID(String(name.dropLast(5))) else {
                problems.append("\(name): the name is not a message id (^[A-Za-z0-9._:-]{1,200}$ before .json)")
                continue
            }
            present.insert(id)
            let body: JSONText
            let version: Int64
            do {
                body = try JSONText(validating: try folder.read(name))
                version = try body.version(member: "syncVersion") ?? 0
            } catch {
                problems.append("\(name): \(error)")
                continue
            }
            let digest = body.sha256
            if state[id] == [String(version), digest] {
                unchanged += 1
                continue
            }
            digests[id] = digest
            items.append(.put(id, version: version, body: body))
        }
        if deleteMissing {
            for id in state.keys.sorted() where !present.contains(id) { items.append(.delete(id)) }
        }

        var stored = 0, deleted = 0, conflicts = 0, reported = Set<Int>()
        let outcomes = try await client.upload(items) { range, outcomes in
            reported.formUnion(range)
            for (item, outcome) in zip(items[range], outcomes) {
                switch (item.change, outcome) {
                case (.put(let version, _), .stored):
                    state[item.id] = [String(version), digests[item.id]!]
                    stored += 1
                case (.delete, .deleted):
                    state[item.id] = nil
                    deleted += 1
                case (_, .conflict(let current)):
                    conflicts += 1
                    problems.append("\(item.id).json: the server holds version \(current.version), newer than this file's")
                case (_, .rejected(let status, let error)):
                    problems.append("\(item.id).json: refused (\(status)): \(error)")
                default:
                    break
                }
            }
            try folder.writeState(Self.stateName, state)
            output.progress("push: \(range.upperBound)/\(items.count) sent, \(stored) stored")
        }
        // Items refused before sending (too large) that were in no request.
        for (index, outcome) in outcomes.enumerated() where !reported.contains(index) {
            if case .rejected(let status, let error) = outcome {
                problems.append("\(items[index].id).json: refused (\(status)): \(error)")
            }
        }
        if items.count > 0 || recovery != .none || (try? anchors.load()) == nil {
            switch try await client.catchUp(from: try anchors.load()) {
            case .end(let anchor):
                try anchors.save(anchor)
            case .gone(.compacted):
                guard case .end(let anchor) = try await client.catchUp(from: nil) else { break }
                try anchors.save(anchor)
            case .gone:
                // Replaced while this push ran: what it acknowledged may be
                // gone too. The next run sends everything.
                state = [:]
                try folder.writeState(Self.stateName, state)
                try anchors.save(nil)
                problems.append("the server's inbox was replaced during this push (a restore?): run it again to send everything again")
            }
        }
        for problem in problems.prefix(20) { output.error(problem) }
        if problems.count > 20 { output.error("... and \(problems.count - 20) more") }
        output.result(
            "push: \(names.count) files, \(items.count) sent, \(stored) stored, \(deleted) deleted, "
                + "\(unchanged) unchanged, \(conflicts) conflicts, \(problems.count - conflicts) refused"
                + recovery.note,
            [("command", .string("push")), ("files", .int(names.count)), ("sent", .int(items.count)),
             ("stored", .int(stored)), ("deleted", .int(deleted)), ("unchanged", .int(unchanged)),
             ("conflicts", .int(conflicts)), ("refused", .int(problems.count - conflicts)),
             ("resent", .bool(recovery.resent)), ("reread", .bool(recovery == .reread)),
             ("anchorGone", recovery.reason.map { .string($0.rawValue) } ?? .null),
             ("problems", .array(problems.map { .string($0) }))])
        return problems.isEmpty ? SyncCommand.done : SyncCommand.notAllStored
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

    /// For the summary line.
    var note: String {
        switch self {
        case .none: return ""
        case .reread: return " (the server compacted its feed past the last push's anchor: read the feed again, nothing sent again)"
        case .resent(.replaced?): return " (the server's inbox was restored from a backup or rebuilt: everything sent again)"
        case .resent(.ahead?): return " (the server lost writes it had acknowledged: everything sent again)"
        case .resent: return " (the server cannot answer from the last push's anchor: everything sent again)"
        }
    }
}
