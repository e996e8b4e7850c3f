import Dispatch
import Foundation
import MockCloudClient
import MockCloudSystem
import MockCloudWire

// `client-bench [--device ID] engine URL CA KEY STATE STORE [--include-own]`:
// a SyncEngine on the state directory STATE, its store the file STORE,
// driven by a line per command on stdin (Tests/client/engine.py kills it
// anywhere in them; Benchmarks/engine_bench.py times it):
//   put ID VERSION BODY   enqueue one put       {"ack": "put", "id", "version"}
//   delete ID             enqueue a deletion    {"ack": "delete", "id"}
//   samples FILE          enqueue FILE's ID VERSION BODY lines in one call
//                                               {"ack": "samples", "count"}
//   edit AT MEMBERS       editSettings(MEMBERS, at: AT)   {"ack": "edit", "at"}
//   run                   run() in a task; when it ends {"run": "cancelled" | "failed", "error"}
//   stop                  that task cancelled and awaited
//   sync                  syncNow()                          {"ack": "sync"}
//   pending               {"pending": {"uploads", "settings", "refused": [ids of refusals not taken]}}
//   take                  acknowledgeRefusals(every refusal pending)   {"taken": count}
//   count                 {"count": pendingCount}
//   opened                {"opened": seconds SyncEngine.open(…) took}
//   second                a second engine on STATE in this process: {"second": "opened"} or {"second": "refused", "error"}
//   network on|off        networkChanged(available:)        {"ack": "network", "available"}
//   idle SECONDS          syncUntilIdle(within:)  {"idle": {"uploads", "settings"}, "took"} or {"idle": "failed", "error"}
//   reopen                close(), then a new engine on STATE (`open`), running if the old one ran
//                                               {"reopened": true, "pending": {...}} or {"reopened": false, "error"}
// Each event is a line {"event": kind, "t": wall-clock seconds, ...}. EOF
// ends it through close() (the run stopped, its transfers ended). Output
// lines are written whole, one at a time.

/// Lines to stdout, one whole line at a time from any task.
final class Output: @unchecked Sendable {
    private let lock = NSLock()
    func line(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        say(text)
    }
}

/// The store an engine follows into: a file replaced atomically with each
/// page (AtomicFile: temporary, fsync, rename, folder fsync), holding the
/// anchor, each message (`m ID VERSION SEQ BODY`) and the record of every
/// application (`a ID SEQ full|incremental`), so a test can tell a change
/// applied twice from one applied once.
actor FileStore: ChangeApplier {
    let path: String
    private var anchor: Anchor?
    private var messages: [MessageID: (version: Int64, seq: Int64, body: JSONText)] = [:]
    private var record: [String] = []

    init(path: String) throws {
        self.path = path
        guard let bytes = try Sys.readFile(path) else { return }
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 4).map { String(decoding: $0, as: UTF8.self) }
            switch fields.first {
            case "anchor": anchor = fields.count == 2 ? Anchor(fields[1]) : nil
            case "m":
                guard fields.count == 5, let id = MessageID(fields[1]), let version = Int64(fields[2]), let seq = Int64(fields[3])
                else { throw ClientError.local("\(path): a line that is not m ID VERSION SEQ BODY") }
                messages[id] = (version, seq, try JSONText(validating: fields[4]))
            case "a": record.append(String(decoding: line, as: UTF8.self))
            default: throw ClientError.local("\(path): a line that is not anchor, m or a")
            }
        }
    }

    func savedAnchor() async throws -> Anchor? { anchor }

    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {
        var messages = self.messages
        var record = self.record
        let kind = changes.isFullRead ? "full" : "incremental"
        for message in changes.messages {
            guard let body = message.body else { continue }
            messages[message.id] = (message.version, message.seq, body)
            record.append("a \(message.id) \(message.seq) \(kind)")
        }
        for deletion in changes.deleted {
            messages[deletion.id] = nil
            record.append("a \(deletion.id) \(deletion.seq) \(kind)")
        }
        if let live = changes.liveIDs { messages = messages.filter { live.contains($0.key) } }
        let saved = anchor ?? self.anchor
        var text = Array("anchor \(saved?.rawValue ?? "-")\n".utf8)
        for (id, message) in messages.sorted(by: { $0.key < $1.key }) {
            text += Array("m \(id) \(message.version) \(message.seq) ".utf8) + message.body.bytes + [UInt8(ascii: "\n")]
        }
        for line in record { text += Array((line + "\n").utf8) }
        let slash = path.lastIndex(of: "/")!
        try AtomicFile.write(text, to: String(path[path.index(after: slash)...]), in: String(path[..<slash]))
        self.messages = messages
        self.record = record
        self.anchor = saved
    }
}

func runEngine(_ client: BoxClient, _ options: [String]) async throws {
    var options = options
    guard options.count >= 2 else { throw ClientError.invalidArgument("engine needs STATE and STORE") }
    let (state, storePath) = (URL(fileURLWithPath: options.removeFirst()), options.removeFirst())
    var includeOwn = false
    for option in options {
        guard option == "--include-own" else { throw ClientError.invalidArgument("engine: unknown option \(option)") }
        includeOwn = true
    }
    let store = try FileStore(path: storePath.hasPrefix("/") ? storePath : FileManager.default.currentDirectoryPath + "/" + storePath)
    let opening = ContinuousClock.now
    var engine = try await SyncEngine.open(client: client, stateDirectory: state, store: store, excludingOwnWrites: !includeOwn)
    let opened = ContinuousClock.now - opening
    let out = Output()
    func print(_ engine: SyncEngine) -> Task<Void, Never> {
        Task {
            for await event in engine.events { out.line(describe(event)) }
        }
    }
    var printer = print(engine)
    let (lines, feeder) = AsyncStream<String>.makeStream()
    DispatchQueue.global().async {
        while let line = readLine() { feeder.yield(line) }
        feeder.finish()
    }
    var running: Task<Void, Never>?
    func stop() async {
        running?.cancel()
        await running?.value
        running = nil
    }
    func run(_ engine: SyncEngine) -> Task<Void, Never> {
        Task {
            do {
                try await engine.run()
            } catch is CancellationError {
                out.line(#"{"run": "cancelled"}"#)
            } catch {
                out.line(#"{"run": "failed", "error": \#(quoted("\(error)"))}"#)
            }
        }
    }
    func counts(_ pending: SyncEngine.Pending) -> String {
        #"{"uploads": \#(pending.uploads.count), "settings": \#(pending.settingsMembers.count)}"#
    }
    var failure: (any Error)?
    commands: for await line in lines {
        do {
            let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            switch (words.first ?? "", words.count) {
            case ("put", 4):
                guard let id = MessageID(words[1]), let version = Int64(words[2]) else { throw ClientError.invalidArgument(line) }
                try await engine.enqueue([.put(id, version: version, body: try JSONText(validating: words[3]))])
                out.line(#"{"ack": "put", "id": \#(quoted(words[1])), "version": \#(version)}"#)
            case ("delete", 2):
                guard let id = MessageID(words[1]) else { throw ClientError.invalidArgument(line) }
                try await engine.enqueue([.delete(id)])
                out.line(#"{"ack": "delete", "id": \#(quoted(words[1]))}"#)
            case ("samples", 2):
                guard let bytes = try Sys.readFile(words[1]) else { throw ClientError.local("no \(words[1])") }
                let items = try bytes.split(separator: UInt8(ascii: "\n")).map { line -> UploadItem in
                    let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
                    guard fields.count == 3, let id = MessageID(String(decoding: fields[0], as: UTF8.self)),
                        let version = Int64(String(decoding: fields[1], as: UTF8.self))
                    else { throw ClientError.local("a sample line without ID VERSION BODY") }
                    return .put(id, version: version, body: try JSONText(validating: Array(fields[2])))
                }
                try await engine.enqueue(items)
                out.line(#"{"ack": "samples", "count": \#(items.count)}"#)
            case ("edit", 3...):
                let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
                guard let at = Timestamp.parse(parts[1]) else { throw ClientError.invalidArgument("edit: \(parts[1]) is not a time stamp") }
                try await engine.editSettings(try JSONText(validating: parts[2]), at: Date(timeIntervalSince1970: Double(at) / 1_000_000))
                out.line(#"{"ack": "edit", "at": \#(quoted(parts[1]))}"#)
            case ("run", 1):
                guard running == nil else { continue }
                running = run(engine)
            case ("stop", 1):
                await stop()
            case ("sync", 1):
                await engine.syncNow()
                out.line(#"{"ack": "sync"}"#)
            case ("pending", 1):
                let pending = try await engine.pending
            let refused = pending.refusals.map { quoted($0.item.id.rawValue) } + pending.settingsRefusals.map { _ in quoted("settings") }
            out.line(#"{"pending": {"uploads": \#(pending.uploads.count), "settings": \#(pending.settingsMembers.count), "refused": [\#(refused.joined(separator: ", "))]}}"#)
        case ("opened", 1):
            out.line(#"{"opened": \#(seconds(opened))}"#)
        case ("count", 1):
            out.line(#"{"count": \#(await engine.pendingCount)}"#)
        case ("take", 1):
            let pending = try await engine.pending
            let numbers = pending.refusals.map(\.number) + pending.settingsRefusals.map(\.number)
            try await engine.acknowledgeRefusals(numbers)
            out.line(#"{"taken": \#(numbers.count)}"#)
            case ("second", 1):
                do {
                    _ = try SyncEngine(client: client, stateDirectory: state, store: store)
                    out.line(#"{"second": "opened"}"#)
                } catch {
                    out.line(#"{"second": "refused", "error": \#(quoted("\(error)"))}"#)
                }
            case ("network", 2):
                guard ["on", "off"].contains(words[1]) else { throw ClientError.invalidArgument(line) }
                await engine.networkChanged(available: words[1] == "on")
                out.line(#"{"ack": "network", "available": \#(words[1] == "on")}"#)
            case ("idle", 2):
                guard let limit = Double(words[1]) else { throw ClientError.invalidArgument(line) }
                let start = ContinuousClock.now
                do {
                    let left = try await engine.syncUntilIdle(within: .milliseconds(Int(limit * 1000)))
                    out.line(#"{"idle": \#(counts(left)), "took": \#(seconds(ContinuousClock.now - start))}"#)
                } catch {
                    out.line(#"{"idle": "failed", "error": \#(quoted("\(error)"))}"#)
                }
            case ("reopen", 1):
                let wasRunning = running != nil
                await engine.close()
                await running?.value
                running = nil
                await printer.value
                do {
                    engine = try await SyncEngine.open(client: client, stateDirectory: state, store: store, excludingOwnWrites: !includeOwn)
                    printer = print(engine)
                    if wasRunning { running = run(engine) }
                    out.line(#"{"reopened": true, "pending": \#(counts(try await engine.pending))}"#)
                } catch {
                    out.line(#"{"reopened": false, "error": \#(quoted("\(error)"))}"#)
                    break commands
                }
            default:
                throw ClientError.invalidArgument("engine: unknown command \(String(reflecting: line))")
            }
        } catch {
            failure = error
            break commands
        }
    }
    // Every exit through close(): the run stopped and its transfers ended
    // before the process goes (libcurl's and OpenSSL's exit-time cleanup
    // under a live transfer aborted once in 19 runs).
    await engine.close()
    await running?.value
    await printer.value
    if let failure { throw failure }
}

/// An event as one JSON line.
func describe(_ event: SyncEngine.Event) -> String {
    func ids(_ ids: [MessageID]) -> String { "[" + ids.map { quoted($0.rawValue) }.joined(separator: ", ") + "]" }
    var fields = [#""event": \#(quoted(event.kind.description))"#, #""t": \#(Date().timeIntervalSince1970)"#]
    if !event.ids.isEmpty { fields.append(#""ids": \#(ids(event.ids))"#) }
    if !event.deletedIDs.isEmpty { fields.append(#""deleted": \#(ids(event.deletedIDs))"#) }
    if !event.refusals.isEmpty {
        let refusals = event.refusals.map { #"{"id": \#(quoted($0.item.id.rawValue)), "status": \#($0.status), "reason": \#(quoted($0.reason))}"# }
        fields.append(#""refused": [\#(refusals.joined(separator: ", "))]"#)
    }
    if !event.members.isEmpty { fields.append(#""members": [\#(event.members.map(quoted).joined(separator: ", "))]"#) }
    if !event.keptMembers.isEmpty { fields.append(#""kept": [\#(event.keptMembers.map(quoted).joined(separator: ", "))]"#) }
    if event.kind == .boxSettings || event.kind == .settingsMerged { fields.append(#""settings": \#(event.settings.map { "\($0.document)" } ?? "null")"#) }
    if let error = event.error { fields.append(#""error": \#(quoted(error.description))"#) }
    if let wait = event.retryIn { fields.append(#""retryIn": \#(seconds(wait))"#) }
    if event.resynced { fields.append(#""resynced": true"#) }
    return "{" + fields.joined(separator: ", ") + "}"
}
