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
///   push (`catchUp`), for `PushLedger.recover`.
///
/// `PushWatch` (`--watch`) makes the same pass, round after round.
struct Push {
    let client: BoxClient
    let directory: String
    let deleteMissing: Bool
    static let stateName = ".mockcloud-sync-pushed"
    static let anchorName = ".mockcloud-sync-push-anchor"

    func run(_ output: inout Output) async throws -> Int32 {
        var ledger = try PushLedger(client: client, directory: directory, deleteMissing: deleteMissing)
        let recovery = try await ledger.recover()
        var sent = 0, stored = 0
        var round = try await ledger.pass(.everything) { batch in
            sent += batch.tally.sent
            stored += batch.tally.stored
            output.progress("push: \(sent) sent, \(stored) stored")
        }
        let count = round.tally.sent
        if ledger.anchorIsStale, try await !ledger.renewAnchor() {
            round.tally.problems.append(
                "the server's inbox was replaced during this push (a restore?): run it again to send everything again")
        }
        Self.show(round.tally.problems, &output)
        let tally = round.tally
        output.result(
            "push: \(round.files) files, \(count) sent, \(tally.stored) stored, \(tally.deleted) deleted, "
                + "\(round.unchanged) unchanged, \(tally.conflicts) conflicts, \(tally.refused) refused"
                + recovery.note,
            [("command", .string("push")), ("files", .int(round.files)), ("sent", .int(count)),
             ("stored", .int(tally.stored)), ("deleted", .int(tally.deleted)), ("unchanged", .int(round.unchanged)),
             ("conflicts", .int(tally.conflicts)), ("refused", .int(tally.refused)),
             ("resent", .bool(recovery.resent)), ("reread", .bool(recovery == .reread)),
             ("anchorGone", recovery.reason.map { .string($0.rawValue) } ?? .null),
             ("problems", .array(tally.problems.map { .string($0) }))])
        return tally.problems.isEmpty ? SyncCommand.done : SyncCommand.notAllStored
    }

    /// The first 20 problems on stderr, and how many more there were.
    static func show(_ problems: [String], _ output: inout Output) {
        for problem in problems.prefix(20) { output.error(problem) }
        if problems.count > 20 { output.error("... and \(problems.count - 20) more") }
    }
}

/// What became of what a pass sent: the whole pass, or one request of it.
struct PushTally {
    var sent = 0
    var stored = 0
    var deleted = 0
    var conflicts = 0
    /// Each file not sent and each item not stored, with why (conflicts
    /// and the box's refusals alike).
    var problems: [String] = []

    /// Files and items neither stored nor in conflict.
    var refused: Int { problems.count - conflicts }

    mutating func add(_ other: PushTally) {
        sent += other.sent
        stored += other.stored
        deleted += other.deleted
        conflicts += other.conflicts
        problems += other.problems
    }
}

/// One pass: what it looked at and decided to send, then what became of it.
struct PushRound {
    /// Files read.
    var files = 0
    /// Files whose version and body the box had acknowledged already.
    var unchanged = 0
    /// What is to be sent next (a pass's chunk).
    var items: [UploadItem] = []
    /// The SHA-256 of each put's compact body, for the record.
    var digests: [MessageID: Digest] = [:]
    var tally = PushTally()
}

/// One bulk request of a pass, as `PushLedger.send` recorded it.
struct PushBatch {
    /// The items it carried, as positions in the chunk's items.
    var range: Range<Int>
    var ids: [MessageID]
    var tally: PushTally
}
