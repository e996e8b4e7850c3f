import MockCloudClient
import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// `push DIR --watch`: the push made for good. Each `<id>.json` is sent the
/// moment it is whole (renamed into DIR, or closed after writing), by the
/// same pass as `push` (`PushLedger`), round after round:
///
/// - A round takes every change reported by then, and the bulk requests
///   carry all of it; what arrives while a request is in flight goes in
///   the next round. No timer delays a change: a lone file costs one round
///   trip.
/// - The first round looks at every file, so whatever the ack record does
///   not hold (a push killed half-way, files written while it was stopped)
///   is sent; lost events (the kernel's queue overflowed) make a round that
///   looks at every file too.
/// - A box that stops answering costs nothing but time: the watch keeps
///   collecting changes, tries again with the client's backoff (capped,
///   with jitter), asks the box on its return whether it still holds what
///   it acknowledged (`recover`), and sends what was written meanwhile.
/// - When no change is waiting, the anchor is renewed after writes, so that
///   a later restore of the box from a backup is noticed.
/// - SIGINT or SIGTERM (task cancellation) ends it with a line saying what
///   it sent, exit 0. The folder itself removed or moved ends it with an
///   error (exit 3).
///
/// It prints a line per bulk request (`--json`: an object each), the
/// problems of each round on stderr, and a line once the first round is done.
struct PushWatch {
    let client: BoxClient
    let directory: String
    let deleteMissing: Bool

    /// What the watch did since it started, and what it still has to do.
    struct Progress {
        var tally = PushTally()
        var requests = 0
        /// Changes taken, not yet sent (or not sent for the box's absence).
        var pending = PushLedger.Scope.everything
        /// The box did not answer: ask it (`recover`) before the next round.
        var recovering = true
        /// The waits while the box does not answer (its `failures`: rounds in a row).
        var backoff: Backoff
        var watching = false
    }

    func run(_ output: inout Output) async throws -> Int32 {
        // Watching starts before the first look: nothing written in between is missed.
        let events = try FolderEvents(directory: directory)
        defer { events.stop() }
        var ledger = try PushLedger(client: client, directory: directory, deleteMissing: deleteMissing)
        var progress = Progress(backoff: Backoff(client.configuration.retry))
        do {
            while true {
                var changes = progress.pending == .nothing ? try await events.next() : FolderChanges()
                changes.merge(try events.take())
                if let reason = changes.folderGone { throw gone(reason) }
                progress.pending.merge(PushLedger.Scope(changes))
                do {
                    try await round(&ledger, &progress, events, &output)
                } catch is ClientError where !Sys.exists(directory) {
                    // A write into the folder failed as it went: its event says how.
                    while changes.folderGone == nil { changes.merge(try await events.next()) }
                    throw gone(changes.folderGone!)
                }
            }
        } catch is CancellationError {
            let tally = progress.tally
            output.result(
                "push --watch: stopped; \(tally.sent) sent in \(progress.requests) requests since it started: "
                    + "\(tally.stored) stored, \(tally.deleted) deleted, \(tally.conflicts) conflicts, \(tally.refused) refused",
                [("command", .string("push")), ("stopped", .bool(true)), ("requests", .int(progress.requests)),
                 ("sent", .int(tally.sent)), ("stored", .int(tally.stored)), ("deleted", .int(tally.deleted)),
                 ("conflicts", .int(tally.conflicts)), ("refused", .int(tally.refused))])
            return SyncCommand.done
        }
    }

    /// The error that ends the watch when its folder is gone, and why.
    func gone(_ reason: String) -> ClientError {
        .local("the watched folder \(directory) is gone (\(reason)): push --watch stops; "
            + "make the folder again (its record went with it: every file is sent again) and start it again")
    }

    /// Sends what is pending; the box away, waits the backoff instead and
    /// keeps it pending.
    func round(_ ledger: inout PushLedger, _ progress: inout Progress, _ events: FolderEvents, _ output: inout Output) async throws {
        var scope = progress.pending
        progress.pending = .nothing
        do {
            if progress.recovering {
                let recovery = try await ledger.recover()
                progress.recovering = false
                if recovery.resent { scope = .everything }
                if let sentence = recovery.sentence { output.error("push --watch: " + sentence) }
            }
            let round = try await ledger.pass(scope) { batch in
                progress.requests += 1
                Self.show(batch, &output)
            }
            progress.tally.add(round.tally)
            Push.show(round.tally.problems, &output)
            if progress.backoff.failures > 0 {
                output.error("push --watch: the box answers again; what was written meanwhile is sent")
                progress.backoff.succeeded()
            }
            if !events.hasPending, ledger.anchorIsStale, try await !ledger.renewAnchor() {
                output.error("push --watch: the box's inbox was replaced (a restore?): every file is sent again")
                progress.pending = .everything
            }
            if !progress.watching {
                progress.watching = true
                Self.showWatching(directory, round, progress, &output)
            }
        } catch ClientError.Code.unavailable {
            progress.pending.merge(scope)
            progress.recovering = true
            let pause = progress.backoff.failed()
            if progress.backoff.failures == 1 {
                output.error("push --watch: the box does not answer; still watching \(directory), "
                    + "and what is written meanwhile is sent once it answers (trying again every few seconds)")
            }
            try await client.configuration.sleep(for: pause)
            try Task.checkCancellation()
        }
    }

    /// A line for one bulk request.
    static func show(_ batch: PushBatch, _ output: inout Output) {
        let tally = batch.tally
        var text = "sent \(tally.sent): \(tally.stored) stored, \(tally.deleted) deleted"
        if tally.conflicts > 0 { text += ", \(tally.conflicts) conflicts" }
        if tally.refused > 0 { text += ", \(tally.refused) refused" }
        let ids = batch.ids.map(\.rawValue)
        text += " (" + (ids.count <= 3 ? ids.joined(separator: ", ") : "\(ids[0]) … \(ids[ids.count - 1])") + ")"
        output.result(text, [("sent", .int(tally.sent)), ("stored", .int(tally.stored)), ("deleted", .int(tally.deleted)),
                             ("conflicts", .int(tally.conflicts)), ("refused", .int(tally.refused)),
                             ("ids", .array(ids.map { .string($0) }))])
    }

    /// The line once the first round is done: the folder caught up, watched from now on.
    static func showWatching(_ directory: String, _ round: PushRound, _ progress: Progress, _ output: inout Output) {
        output.result(
            "push --watch: \(directory) caught up (\(round.files) files, \(progress.tally.sent) sent, "
                + "\(round.unchanged) unchanged); watching for new files (Ctrl-C or SIGTERM stops)",
            [("command", .string("push")), ("watching", .bool(true)), ("files", .int(round.files)),
             ("sent", .int(progress.tally.sent)), ("unchanged", .int(round.unchanged))])
    }
}
