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
///   push (`catchUp`). When the server cannot answer from it (410: its
///   inbox was restored from a backup, or rebuilt), acknowledgements may
///   have been lost with it: the record is dropped and every file is sent
///   again (unchanged ones answer 200 and change nothing).
struct Push {
    let client: MockCloudClient
    let directory: String
    let deleteMissing: Bool
    static let stateName = ".mockcloud-sync-pushed"
    static let anchorName = ".mockcloud-sync-push-anchor"

    func run(_ output: inout Output) async throws -> Int32 {
        let folder = Folder(path: directory)
        var state = try folder.readState(Self.stateName)
        let anchors = FileAnchorStore(directory: directory, name: Self.anchorName)
        var resent = false
        if !state.isEmpty, try await client.catchUp(from: try anchors.load()) == nil {
            state = [:]
            resent = true
            try anchors.save(nil)
            try folder.writeState(Self.stateName, state)
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
        if items.count > 0 || resent || (try? anchors.load()) == nil {
            let end = try await client.catchUp(from: try anchors.load())
            try anchors.save(end == nil ? try await client.catchUp(from: nil) : end)
        }
        for problem in problems.prefix(20) { output.error(problem) }
        if problems.count > 20 { output.error("... and \(problems.count - 20) more") }
        output.result(
            "push: \(names.count) files, \(items.count) sent, \(stored) stored, \(deleted) deleted, "
                + "\(unchanged) unchanged, \(conflicts) conflicts, \(problems.count - conflicts) refused"
                + (resent ? " (the server lost its state: everything sent again)" : ""),
            [("command", .string("push")), ("files", .int(names.count)), ("sent", .int(items.count)),
             ("stored", .int(stored)), ("deleted", .int(deleted)), ("unchanged", .int(unchanged)),
             ("conflicts", .int(conflicts)), ("refused", .int(problems.count - conflicts)),
             ("resent", .bool(resent)), ("problems", .array(problems.map { .string($0) }))])
        return problems.isEmpty ? SyncCommand.done : SyncCommand.notAllStored
    }
}
