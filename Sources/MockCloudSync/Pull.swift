import MockCloudClient
import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// `pull DIR`: the feed into DIR. Each message is `<id>.json` holding its
/// body (compact JSON, as stored); a deletion removes the file.
/// `.mockcloud-sync-pulled` records each id's version and seq, and
/// `.mockcloud-sync-anchor` (FileAnchorStore) where the next pull starts.
/// Each page is applied in this order: message files (written together,
/// synced, renamed), removals, the record, then the anchor; a crash leaves
/// the anchor behind the files, and a page applied twice changes nothing.
/// A full read (the first pull, or after a 410) saves its anchor only at its
/// end, after removing the files of ids the server no longer holds.
///
/// With `follow`, once the folder is current it stays so: the pull waits
/// for each change (`GET /inbox?wait=`) and applies it as it commits,
/// printing one line per change (JSON with `--json`), until interrupted.
struct Pull {
    let client: BoxClient
    let directory: String
    let excludeOwn: Bool
    var follow = false
    static let recordName = ".mockcloud-sync-pulled"
    static let anchorName = ".mockcloud-sync-anchor"

    func run(_ output: inout Output) async throws -> Int32 {
        let applier = try FolderApplier(directory: directory)
        var current = false  // following, and the folder caught up once
        var resynced = false
        // Following ends when Ctrl-C or SIGTERM cancels the task.
        do {
            _ = try await client.apply(into: applier, excludingOwnWrites: excludeOwn, follow: follow) { page, sofar in
                resynced = sofar.resynced
                if current {
                    Self.show(page, &output)
                } else {
                    output.progress("pull: \(applier.written) written, \(applier.removed) removed (\(sofar.pages) pages)")
                }
                if follow && !current && !page.hasMore {
                    current = true
                    output.result("pull: \(applier.count) messages in \(directory); following (Ctrl-C stops)",
                                  [("command", .string("pull")), ("written", .int(applier.written)), ("removed", .int(applier.removed)),
                                   ("messages", .int(applier.count)), ("resync", .bool(sofar.resynced)), ("following", .bool(true))])
                }
            }
        } catch is CancellationError where follow {}
        if follow {
            output.result("pull: stopped following; \(applier.count) messages in \(directory)",
                          [("command", .string("pull")), ("stopped", .bool(true)), ("messages", .int(applier.count))])
            return SyncCommand.done
        }
        output.result(
            "pull: \(applier.written) written, \(applier.removed) removed, \(applier.count) messages in \(directory)"
                + (resynced ? " (a full resync after 410)" : ""),
            [("command", .string("pull")), ("written", .int(applier.written)), ("removed", .int(applier.removed)),
             ("messages", .int(applier.count)), ("resync", .bool(resynced))])
        return SyncCommand.done
    }

    /// One line per change of a page that came while following.
    static func show(_ page: ChangePage, _ output: inout Output) {
        if page.startsResync {
            output.result("resync: the server could not answer from the saved anchor (410); the folder was read again",
                        [("change", .string("resync")), ("messages", .int(page.liveIDs?.count ?? 0))])
        }
        for message in page.messages {
            output.result("stored \(message.id.rawValue) (version \(message.version), seq \(message.seq)"
                            + (message.source.map { ", from \($0)" } ?? "") + ")",
                        [("change", .string("stored")), ("id", .string(message.id.rawValue)),
                         ("version", .int(Int(message.version))), ("seq", .int(Int(message.seq)))])
        }
        for deletion in page.deleted {
            output.result("deleted \(deletion.id.rawValue) (seq \(deletion.seq))",
                        [("change", .string("deleted")), ("id", .string(deletion.id.rawValue)), ("seq", .int(Int(deletion.seq)))])
        }
    }
}

/// The pull's folder as a `ChangeApplier` (`BoxClient.apply(into:)` reads
/// the feed, 410s included): each page's message files written together
/// (synced, renamed), removals, the record, then the anchor.
final class FolderApplier: ChangeApplier, @unchecked Sendable {
    let directory: String
    private let folder: Folder
    private let anchors: FileAnchorStore
    /// id → [version, seq] of each message in the folder (`Pull.recordName`).
    private var record: [MessageID: [String]]
    /// Files written and removed so far.
    private(set) var written = 0, removed = 0

    /// Makes the folder when it is missing, and reads its record.
    init(directory: String) throws {
        self.directory = directory
        folder = Folder(path: directory)
        do {
            try Sys.makeDirectories(directory)
        } catch {
            throw ClientError.local("cannot make \(directory): \(error)")
        }
        anchors = FileAnchorStore(directory: directory, name: Pull.anchorName)
        record = try folder.readState(Pull.recordName)
    }

    /// Messages in the folder.
    var count: Int { record.count }

    func savedAnchor() async throws -> Anchor? { try anchors.load() }

    func apply(_ page: ChangePage, saving anchor: Anchor?) async throws {
        // A full read broken off half-way starts again from the beginning.
        if page.startsResync { try anchors.save(nil) }
        do {
            var batch = AtomicBatch(directory: directory)
            for message in page.messages {
                guard let body = message.body else { continue }  // a page's messages are live
                try batch.stage(body.bytes, as: message.id.rawValue + ".json")
                record[message.id] = [String(message.version), String(message.seq)]
            }
            try batch.commit()
            var gone = page.deleted.map(\.id)
            if let live = page.liveIDs { gone += record.keys.filter { !live.contains($0) } }
            for id in gone {
                if try AtomicFile.remove(id.rawValue + ".json", in: directory, durably: false) { removed += 1 }
                record[id] = nil
            }
            if !gone.isEmpty { try Sys.syncDirectory(directory) }
        } catch {
            throw ClientError.local("cannot write into \(directory): \(ClientError.describe(error))")
        }
        written += page.messages.count
        try folder.writeState(Pull.recordName, record)
        if let anchor { try anchors.save(anchor) }
    }
}
