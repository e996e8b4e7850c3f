import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Synchronization
import Testing

// The fixture of the /inbox suites (docs/API.md §4, row by row, through
// `InboxRoute` with an injected clock and a temporary data root: status,
// headers, exact JSON and the files left on disk).

/// A clock that starts at 20260518T044304.134233Z and moves `step`
/// microseconds on every reading (0: a fixed clock).
final class InboxTestClock: Sendable {
    static let start: Timestamp.Micros = Timestamp.parse("20260518T044304.134233Z")!
    let step: Int64
    private let readings = Atomic<Int64>(0)

    init(step: Int64) { self.step = step }

    func now() -> Timestamp.Micros {
        Self.start + step * readings.add(1, ordering: .relaxed).oldValue
    }
}

/// A data root in a fresh temporary folder with an inbox route on it. Thrown
/// HTTP errors become the responses a client would see, as `CGIProgram` does.
final class InboxSandbox {
    static let key = "user-1"
    /// What the fixed clock stamps on every write.
    static let stamp = "20260518T044304.134233Z"

    let data: TemporaryDirectory
    var root: String { data.path }
    let route: InboxRoute

    init(settings: InboxSettings = InboxSettings(), clockStep: Int64 = 0) throws {
        data = try TemporaryDirectory(prefix: "mockcloud-inbox")
        let clock = InboxTestClock(step: clockStep)
        route = InboxRoute(dataRoot: data.path, settings: settings, clock: { clock.now() })
    }

    // MARK: Requests

    func send(
        _ method: String, _ path: String, query: String = "", headers: [String: String] = [:],
        body: [UInt8] = [], userKey: String? = InboxSandbox.key
    ) -> CGIResponse {
        var all = headers
        if let userKey { all["X-User-Key"] = userKey }
        let request = CGIRequest(method: method, path: path, query: query, headers: all, body: body)
        return answer { try route.respond(to: request) }
    }

    func put(_ id: String, _ body: String, version: String? = nil, device: String? = nil) -> CGIResponse {
        send("PUT", "/inbox/" + id, headers: Self.writeHeaders(version, device), body: Array(body.utf8))
    }

    func post(_ body: String, version: String? = nil, device: String? = nil) -> CGIResponse {
        send("POST", "/inbox", headers: Self.writeHeaders(version, device), body: Array(body.utf8))
    }

    func get(_ id: String) -> CGIResponse { send("GET", "/inbox/" + id) }

    func delete(_ id: String, device: String? = nil) -> CGIResponse {
        send("DELETE", "/inbox/" + id, headers: device.map { ["X-Device-Id": $0] } ?? [:])
    }

    func feed(_ query: String = "") -> CGIResponse { send("GET", "/inbox", query: query) }

    private static func writeHeaders(_ version: String?, _ device: String?) -> [String: String] {
        var headers: [String: String] = [:]
        if let version { headers["X-Sync-Version"] = version }
        if let device { headers["X-Device-Id"] = device }
        return headers
    }

    // MARK: Disk

    var inboxPath: String { root + "/inbox/" + Self.key }
    var logPath: String { inboxPath + "/changes.log" }
    var messagesPath: String { inboxPath + "/messages" }

    /// The size of `changes.log`, or nil when there is none.
    func logSize() -> Int? {
        var info = stat()
        guard stat(logPath, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    func logBytes() -> [UInt8] { Self.read(logPath) ?? [] }

    /// The first line of `changes.log` without its padding.
    func logHeaderText() -> String {
        String(decoding: logBytes().prefix(ChangeLog.recordSize), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The generation and epoch named in the log header: every anchor up to
    /// its seq (`<generation>.<epoch>`).
    func generation() throws -> String {
        let fields = logHeaderText().split(separator: " ")
        try #require(fields.count == 7)
        return "\(fields[2]).\(Int(fields[6])!)"
    }

    /// The generation alone, for anchors issued before a compaction (epoch 0).
    func rawGeneration() throws -> String {
        String(try generation().split(separator: ".")[0])
    }

    /// The names in the messages folder, sorted (temporary files included).
    func messageFiles() -> [String] { Self.entries(messagesPath) }

    func messageText(_ id: String) -> String? {
        Self.read(messagesPath + "/" + id + ".json").map { String(decoding: $0, as: UTF8.self) }
    }

    /// Appends raw bytes to `changes.log`, as a torn append would leave them.
    func appendToLog(_ bytes: [UInt8]) throws {
        let fd = open(logPath, O_WRONLY | O_APPEND)
        try #require(fd >= 0)
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)
    }

    /// What a crash between the log append and the message write leaves behind.
    func appendOrphanRecord(seq: Int64, deleted: Bool = false, live: Int, id: String) throws {
        var log = try ChangeLog.openForWriting(logPath, directory: inboxPath)
        defer { log.close() }
        try log.append(ChangeRecord(seq: seq, deleted: deleted, live: live, id: try #require(MessageID(id))))
    }

    func wipeInbox() throws { try FileManager.default.removeItem(atPath: inboxPath) }

    static func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    // MARK: Expected JSON

    /// The envelope as the server prints it.
    static func envelope(
        _ id: String, version: Int64 = 0, seq: Int64, source: String? = nil, at stamp: String = InboxSandbox.stamp,
        body: String
    ) -> String {
        let sourceText = source.map { "\"\($0)\"" } ?? "null"
        return "{\"id\": \"\(id)\", \"version\": \(version), \"seq\": \(seq), \"source\": \(sourceText), "
            + "\"serverReceivedAt\": \"\(stamp)\", \"body\": \(body)}"
    }

    static func error(_ sentence: String) -> String { "{\"error\": \"\(sentence)\"}" }
}

extension CGIResponse {
    /// The body as text, for exact comparisons.
    var inboxBody: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object; a test failure when it is not one.
    func inboxObject() throws -> JSONObject {
        try #require(try JSONParser.parse(body).objectValue)
    }
}

/// Small readers of parsed responses.
enum InboxJSON {
    static func string(_ value: JSONValue?) -> String? { value?.stringValue }

    static func int(_ value: JSONValue?) -> Int64? {
        if case .number(let text)? = value { return Int64(text) }
        return nil
    }

    static func array(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let elements)? = value { return elements }
        return []
    }

    static func text(_ value: JSONValue) -> String { String(decoding: JSONPrinter.compact(value), as: UTF8.self) }
}
