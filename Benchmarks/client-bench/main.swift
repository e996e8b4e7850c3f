import Dispatch
import Foundation
import Glibc
import MockCloudClient
import MockCloudSystem
import MockCloudWire

// The library alone, over either transport, for Benchmarks/lan/bench_client.py
// (push, pull: no folder, no state files, no process start in the figure)
// and Tests/client/run.py (every command):
//   client-bench [--transport curl|urlsession] [--device ID] [--attempts N] [--timeout SECONDS] COMMAND URL CA KEY [ARG...]
// (the device id defaults to bench-1; --attempts: N attempts 0.2 to 2 s
// apart instead of the standard policy's 12; --timeout: the transport's
// request timeout instead of its default)
//   push SAMPLES          a line per sample: ID VERSION BODY-JSON; prints
//                         {"seconds", "items" (stored), "rejected"}
//   pull [STATE]          the feed from STATE's anchor (a first line ANCHOR
//                         or "-", then ID VERSION BODY lines), STATE rewritten
//                         after; prints {"seconds", "items", "resync", "pages"}
//   settings-get          prints {"status": "stored", "etag", "document"} or {"status": "none"}
//   settings-put FILE [ETAG]   prints {"status": "written", "etag", "document"}
//                         or {"status": 409|412, "current"}
//   hold                  GET /user/settings; on a line on stdin, the task
//                         is cancelled; prints {"outcome", "ms" (after the cancel)}
//   follow                changes(since: nil, follow: true): a line per page,
//                         {"ids", "deleted", "full"}; on a line on stdin the
//                         task is cancelled: {"outcome", "ms"} (after the cancel)
//   watch-settings        settingsUpdates(after: nil): a line per new state,
//                         {"etag", "document"} or {"deleted": true}; stdin as follow
//   engine STATE STORE [--include-own]   a SyncEngine driven from stdin
//                         (EngineCommand.swift)
// A client error prints {"error", "kind"} and exits 1; usage exits 2.
var arguments = Array(CommandLine.arguments.dropFirst())
var transportName = "curl"
var device = "bench-1"
var retry = RetryPolicy.standard
var requestTimeout = Duration.seconds(120)
options: while arguments.count >= 2 {
    switch arguments[0] {
    case "--transport": transportName = arguments[1]
    case "--device": device = arguments[1]
    case "--timeout": requestTimeout = .seconds(Int(arguments[1]) ?? 120)
    case "--attempts":
        retry = RetryPolicy(
            maxAttempts: Int(arguments[1]) ?? 1, initialDelay: .milliseconds(200), maxDelay: .seconds(2), maxRetryAfter: .seconds(60))
    default: break options
    }
    arguments.removeFirst(2)
}

func say(_ line: String) {
    try? Sys.writeAll(.standardOutput, Array((line + "\n").utf8))
}

func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func seconds(_ elapsed: Duration) -> Double {
    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// Runs `body` in a task cancelled when a line arrives on stdin; prints
/// how it ended and how long after the cancel: {"outcome", "ms"}, the
/// outcome `finished` when `body` returned, `cancelled` when it threw the
/// client's cancellation, else `failed: <error>`.
func untilCancelledFromStdin(finished: String = "ended", _ body: @escaping @Sendable () async throws -> Void) async throws {
    let task = Task { try await body() }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            _ = readLine()
            done.resume()
        }
    }
    let cancelled = ContinuousClock.now
    task.cancel()
    let outcome: String
    switch await task.result {
    case .success: outcome = finished
    case .failure(is CancellationError): outcome = "cancelled"
    case .failure(let error): outcome = "failed: \(error)"
    }
    say("{\"outcome\": \(quoted(outcome)), \"ms\": \(seconds(ContinuousClock.now - cancelled) * 1000)}")
}

guard arguments.count >= 4, let key = UserKey(arguments[3]), let deviceID = DeviceID(device),
    transportName == "curl" || transportName == "urlsession"
else {
    try? Sys.writeAll(
        .standardError,
        Array(("usage: client-bench [--transport curl|urlsession] [--device ID] [--attempts N] [--timeout SECONDS]"
            + " push|pull|settings-get|settings-put|hold|follow|watch-settings|engine URL CA KEY [ARG...]\n").utf8))
    exit(2)
}
let (command, url, caFile) = (arguments[0], arguments[1], arguments[2])
let clock = ContinuousClock()

do {
    let trust = try TrustAnchor(caFile: caFile)
    let transport: any HTTPTransport
    do {
        guard let base = URL(string: url) else { throw ClientError.invalidArgument("\(url) is not a URL") }
        transport = transportName == "curl"
            ? try CurlTransport(baseURL: base, trust: trust, requestTimeout: requestTimeout)
            : try URLSessionTransport(baseURL: base, trust: trust, requestTimeout: requestTimeout)
    } catch let error as TransportError {
        throw ClientError.local(error.description)
    }
    let client = BoxClient(configuration: ClientConfiguration(userKey: key, deviceID: deviceID, retry: retry), transport: transport)
    switch command {
    case "push" where arguments.count == 5:
        guard let lines = try Sys.readFile(arguments[4]) else { throw ClientError.local("no \(arguments[4])") }
        var items: [UploadItem] = []
        for line in lines.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count == 3, let id = MessageID(String(decoding: fields[0], as: UTF8.self)),
                let version = Int64(String(decoding: fields[1], as: UTF8.self))
            else { throw ClientError.local("a sample line without ID VERSION BODY") }
            items.append(.put(id, version: version, body: try JSONText(validating: Array(fields[2]))))
        }
        let start = clock.now
        let outcomes = try await client.upload(items)
        let elapsed = clock.now - start
        let stored = outcomes.filter(\.isDone).count
        say("{\"seconds\": \(seconds(elapsed)), \"items\": \(stored), \"rejected\": \(outcomes.count - stored)}")

    case "pull" where arguments.count <= 5:
        let stateFile = arguments.count == 5 ? arguments[4] : nil
        var anchor: Anchor? = nil
        var held: [MessageID: (version: Int64, body: JSONText)] = [:]
        if let stateFile, let text = try Sys.readFile(stateFile) {
            let lines = text.split(separator: UInt8(ascii: "\n"))
            if let first = lines.first { anchor = Anchor(String(decoding: first, as: UTF8.self)) }
            for line in lines.dropFirst() {
                let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
                guard fields.count == 3, let id = MessageID(String(decoding: fields[0], as: UTF8.self)),
                    let version = Int64(String(decoding: fields[1], as: UTF8.self))
                else { throw ClientError.local("\(stateFile): a line without ID VERSION BODY") }
                held[id] = (version, try JSONText(validating: Array(fields[2])))
            }
        }
        var count = 0, pages = 0, resync = false
        let start = clock.now
        for try await page in client.changes(since: anchor, excludingOwnWrites: false) {
            pages += 1
            count += page.messages.count
            if page.startsResync { resync = true }
            for message in page.messages { held[message.id] = message.body.map { (message.version, $0) } }
            for deletion in page.deleted { held[deletion.id] = nil }
            if let live = page.liveIDs { held = held.filter { live.contains($0.key) } }
            if !page.isFullRead || !page.hasMore { anchor = page.anchor }
        }
        let elapsed = clock.now - start
        if let stateFile {
            var text = Array(((anchor?.rawValue ?? "-") + "\n").utf8)
            for (id, message) in held.sorted(by: { $0.key < $1.key }) {
                text += Array("\(id.rawValue) \(message.version) ".utf8) + message.body.bytes + [UInt8(ascii: "\n")]
            }
            let slash = stateFile.lastIndex(of: "/")
            try AtomicFile.write(
                text, to: String(stateFile[(slash.map { stateFile.index(after: $0) } ?? stateFile.startIndex)...]),
                in: slash.map { String(stateFile[..<$0]) } ?? ".")
        }
        say("{\"seconds\": \(seconds(elapsed)), \"items\": \(count), \"resync\": \(resync), \"pages\": \(pages)}")

    case "settings-get" where arguments.count == 4:
        if let settings = try await client.settings() {
            say("{\"status\": \"stored\", \"etag\": \(quoted(settings.etag ?? "")), \"document\": \(settings.document)}")
        } else {
            say("{\"status\": \"none\"}")
        }

    case "settings-put" where arguments.count == 5 || arguments.count == 6:
        guard let bytes = try Sys.readFile(arguments[4]) else { throw ClientError.local("no \(arguments[4])") }
        switch try await client.putSettings(try JSONText(validating: bytes), ifMatch: arguments.count == 6 ? arguments[5] : nil) {
        case .written(let settings):
            say("{\"status\": \"written\", \"etag\": \(quoted(settings.etag ?? "")), \"document\": \(settings.document)}")
        case .conflict(let status, _, let current):
            say("{\"status\": \(status), \"current\": \(current.map { "\($0.document)" } ?? "null")}")
        }

    case "follow" where arguments.count == 4:
        try await untilCancelledFromStdin {
            for try await page in client.changes(since: nil, follow: true) {
                say("{\"ids\": [\(page.messages.map { quoted($0.id.rawValue) }.joined(separator: ", "))], "
                    + "\"deleted\": [\(page.deleted.map { quoted($0.id.rawValue) }.joined(separator: ", "))], "
                    + "\"full\": \(page.isFullRead)}")
            }
        }

    case "watch-settings" where arguments.count == 4:
        try await untilCancelledFromStdin {
            for try await settings in client.settingsUpdates(after: nil) {
                if let settings {
                    say("{\"etag\": \(quoted(settings.etag ?? "")), \"document\": \(settings.document)}")
                } else {
                    say("{\"deleted\": true}")
                }
            }
        }

    case "engine" where arguments.count >= 6:
        try await runEngine(client, Array(arguments[4...]))

    case "hold" where arguments.count == 4:
        try await untilCancelledFromStdin(finished: "answered") { _ = try await client.settings() }

    default:
        try? Sys.writeAll(.standardError, Array("client-bench: unknown command or wrong arguments: \(arguments)\n".utf8))
        exit(2)
    }
} catch let error as ClientError {
    say("{\"error\": \(quoted(error.description)), \"kind\": \"\(error.code)\"}")
    exit(1)
} catch {
    say("{\"error\": \(quoted("\(error)")), \"kind\": \"other\"}")
    exit(1)
}
