import Foundation
import Glibc
@testable import MockCloudCore
import Synchronization
import Testing

// CONTRACT section 4 (/inbox), row by row, through `InboxRoute` with an
// injected clock and a temporary data root: status, headers, exact JSON and
// the files left on disk.

// MARK: - Fixture

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

    let root: String
    let route: InboxRoute

    init(settings: InboxSettings = InboxSettings(), clockStep: Int64 = 0) throws {
        var template = Array((NSTemporaryDirectory() + "/mockcloud-inbox-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError("mkdtemp", errno: errno)
        }
        root = String(cString: made)
        let clock = InboxTestClock(step: clockStep)
        route = InboxRoute(dataRoot: root, settings: settings, clock: { clock.now() })
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

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
    fileprivate var inboxBody: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object; a test failure when it is not one.
    fileprivate func inboxObject() throws -> JSONObject {
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

// MARK: - PUT /inbox/<id>

@Suite struct InboxPutTests {
    @Test func putOfANewIDIsCreatedWithLocationAndTheEnvelope() throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("nm-1234-weight", #"{"kg": 81.5}"#)
        let expected = InboxSandbox.envelope("nm-1234-weight", seq: 1, body: #"{"kg": 81.5}"#)
        #expect(response.status == 201)
        #expect(response.header("Location") == "/inbox/nm-1234-weight")
        #expect(response.inboxBody == expected)
        #expect(inbox.messageFiles() == ["nm-1234-weight.json"])
        #expect(inbox.messageText("nm-1234-weight") == expected)
        #expect(inbox.logSize() == 2 * ChangeLog.recordSize)
        #expect(InboxSandbox.entries(inbox.inboxPath) == ["changes.log", "messages"])
    }

    @Test func bodyIsStoredExactlyAsSent() throws {
        let inbox = try InboxSandbox()
        let body = #"{"z": 1, "a": 0.9990998620664758, "big": 12345678901234567890, "s": "\u00e9", "n": {"y": [1.50e3, null]}}"#
        let response = inbox.put("m", body)
        #expect(response.status == 201)
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 1, body: body))
        #expect(inbox.get("m").inboxBody == InboxSandbox.envelope("m", seq: 1, body: body))
    }

    @Test func retryWithSameVersionAndBodyChangesNothing() throws {
        let inbox = try InboxSandbox(clockStep: 1_000_000)
        let first = inbox.put("m", #"{"a": 1}"#, version: "3", device: "phone")
        #expect(first.status == 201)
        let logBefore = inbox.logBytes()
        let fileBefore = inbox.messageText("m")

        let retry = inbox.put("m", #"{"a": 1}"#, version: "3", device: "mirror-1")
        #expect(retry.status == 200)
        #expect(retry.header("Location") == nil)
        // Same seq, same time stamp, same source: the stored envelope, untouched.
        #expect(retry.inboxBody == first.inboxBody)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageText("m") == fileBefore)
        #expect(inbox.feed().inboxBody.contains("\"anchor\": \"\(try inbox.generation()).1\""))
    }

    @Test func sameVersionWithADifferentBodyIsReplacedWithANewSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "3")
        let response = inbox.put("m", #"{"a": 2}"#, version: "3")
        let expected = InboxSandbox.envelope("m", version: 3, seq: 2, body: #"{"a": 2}"#)
        #expect(response.status == 200)
        #expect(response.header("Location") == nil)
        #expect(response.inboxBody == expected)
        #expect(inbox.messageText("m") == expected)
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
    }

    @Test(arguments: [
        (#"{"a": 1, "b": 2}"#, #"{"b": 2, "a": 1}"#),
        (#"{"a": 1}"#, #"{"a": 1.0}"#),
        (#"{"a": "x"}"#, #"{"a": "x", "b": null}"#),
    ])
    func sameVersionWithAnyVisibleDifferenceInTheBodyIsAChange(first: String, second: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", first)
        let response = inbox.put("m", second)
        #expect(response.status == 200)
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 2, body: second))
    }

    @Test func higherVersionIsReplacedWithANewSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "1", device: "phone")
        let response = inbox.put("m", #"{"a": 1}"#, version: "2", device: "mirror-1")
        let expected = InboxSandbox.envelope("m", version: 2, seq: 2, source: "mirror-1", body: #"{"a": 1}"#)
        #expect(response.status == 200)
        #expect(response.inboxBody == expected)
        #expect(inbox.get("m").inboxBody == expected)
    }

    @Test func lowerVersionIsRejectedWithTheCurrentEnvelope() throws {
        let inbox = try InboxSandbox()
        let stored = inbox.put("m", #"{"a": 1}"#, version: "5")
        let logBefore = inbox.logBytes()
        let response = inbox.put("m", #"{"a": 2}"#, version: "4")
        #expect(response.status == 409)
        #expect(response.inboxBody == """
            {"error": "X-Sync-Version 4 is lower than the stored version 5; nothing was written", \
            "current": \(stored.inboxBody)}
            """)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageText("m") == stored.inboxBody)
    }

    @Test(arguments: ["-1", "abc", "", "1.0", "+1", " 1", "1 ", "0x10", "1000000000000000000", "99999999999999999999"])
    func malformedSyncVersionIsRejected(version: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", #"{"a": 1}"#, version: version)
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "invalid X-Sync-Version \\\"\(version)\\\": must be a non-negative integer"))
        #expect(inbox.messageFiles() == [])
        #expect(inbox.post(#"{"a": 1}"#, version: version).status == 400)
        #expect(inbox.messageFiles() == [])
    }

    @Test(arguments: [("0", Int64(0)), ("007", 7), ("999999999999999999", 999_999_999_999_999_999)])
    func syncVersionIsANonNegativeIntegerOfUpTo18Digits(text: String, value: Int64) throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", "{}", version: text)
        #expect(response.status == 201)
        #expect(response.inboxBody == InboxSandbox.envelope("m", version: value, seq: 1, body: "{}"))
    }

    @Test func versionDefaultsToZero() throws {
        let inbox = try InboxSandbox()
        let first = inbox.put("m", #"{"a": 1}"#)
        #expect(first.inboxBody == InboxSandbox.envelope("m", version: 0, seq: 1, body: #"{"a": 1}"#))
        // An explicit 0 with the same body is the same write: a retry.
        let retry = inbox.put("m", #"{"a": 1}"#, version: "0")
        #expect(retry.status == 200)
        #expect(retry.inboxBody == first.inboxBody)
        // Stored at 5, a write without the header is a lower version.
        _ = inbox.put("m", #"{"a": 1}"#, version: "5")
        #expect(inbox.put("m", #"{"a": 1}"#).status == 409)
    }

    @Test func deviceIDIsKeptAsSource() throws {
        let inbox = try InboxSandbox()
        let response = inbox.put("m", "{}", device: "mirror-1")
        #expect(response.inboxBody == InboxSandbox.envelope("m", seq: 1, source: "mirror-1", body: "{}"))
        #expect(inbox.put("n", "{}").inboxBody == InboxSandbox.envelope("n", seq: 2, source: nil, body: "{}"))
    }

    @Test(arguments: ["", "has space", "a/b", "caf\u{e9}", "a.b", "a:b", String(repeating: "d", count: 129)])
    func invalidDeviceIDIsRejected(device: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("invalid X-Device-Id shape")
        let put = inbox.put("m", "{}", device: device)
        #expect(put.status == 400)
        #expect(put.inboxBody == expected)
        #expect(inbox.post("{}", device: device).inboxBody == expected)
        #expect(inbox.messageFiles() == [])

        _ = inbox.put("m", "{}")
        let delete = inbox.delete("m", device: device)
        #expect(delete.status == 400)
        #expect(delete.inboxBody == expected)
        #expect(inbox.get("m").status == 200)
    }

    @Test func deviceIDOf128CharactersIsAccepted() throws {
        let inbox = try InboxSandbox()
        let device = String(repeating: "d", count: 128)
        #expect(inbox.put("m", "{}", device: device).inboxBody
            == InboxSandbox.envelope("m", seq: 1, source: device, body: "{}"))
    }

    @Test(arguments: ["a/b", "", String(repeating: "x", count: 201), "caf\u{e9}", "a b", "../x", "a\\b", "a?b", "a%2Fb"])
    func invalidMessageIDIsRejectedBeforeAnythingIsStored(id: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("invalid message id: must match ^[A-Za-z0-9._:-]{1,200}$")
        for response in [inbox.put(id, "{}"), inbox.get(id), inbox.delete(id)] {
            #expect(response.status == 400)
            #expect(response.inboxBody == expected)
        }
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
    }

    @Test(arguments: [".", "..", "...", "a:b.c-d_e", String(repeating: "x", count: 200)])
    func unusualValidIDsWorkAndStayInsideTheMessagesFolder(id: String) throws {
        let inbox = try InboxSandbox()
        let put = inbox.put(id, #"{"k": true}"#)
        #expect(put.status == 201)
        #expect(put.header("Location") == "/inbox/" + id)
        #expect(inbox.get(id).inboxBody == InboxSandbox.envelope(id, seq: 1, body: #"{"k": true}"#))
        #expect(inbox.messageFiles() == [id + ".json"])
        #expect(InboxSandbox.entries(inbox.inboxPath) == ["changes.log", "messages"])
        #expect(InboxSandbox.entries(inbox.root + "/inbox") == [InboxSandbox.key])
        #expect(InboxSandbox.entries(inbox.root) == [".locks", "inbox"])
        #expect(inbox.delete(id).status == 204)
        #expect(inbox.get(id).status == 404)
        #expect(inbox.messageFiles() == [id + ".json"])
    }

    @Test(arguments: ["[]", "1", "\"text\"", "null", "true", "[{}]"])
    func bodyThatIsNotAnObjectIsRejected(body: String) throws {
        let inbox = try InboxSandbox()
        let expected = InboxSandbox.error("body must be a JSON object")
        #expect(inbox.put("m", body).inboxBody == expected)
        #expect(inbox.put("m", body).status == 400)
        #expect(inbox.post(body).inboxBody == expected)
        #expect(inbox.messageFiles() == [])
    }

    @Test(arguments: [
        Array("{".utf8), Array(#"{"a":}"#.utf8), [], Array("{'a': 1}".utf8), Array(#"{"a": 1} x"#.utf8),
        Array(#"{"a": 01}"#.utf8), [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],
    ] as [[UInt8]])
    func invalidJSONIsRejected(body: [UInt8]) throws {
        let inbox = try InboxSandbox()
        let put = inbox.send("PUT", "/inbox/m", body: body)
        #expect(put.status == 400)
        #expect(put.inboxBody == InboxSandbox.error("body is not valid JSON"))
        #expect(inbox.send("POST", "/inbox", body: body).status == 400)
        #expect(inbox.messageFiles() == [])
    }

    @Test func aDeletedIDCanBeWrittenAgainWhateverItsVersion() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": 1}"#, version: "5")
        #expect(inbox.delete("m").status == 204)
        let again = inbox.put("m", #"{"a": 2}"#, version: "1")
        #expect(again.status == 201)
        #expect(again.header("Location") == "/inbox/m")
        #expect(again.inboxBody == InboxSandbox.envelope("m", version: 1, seq: 3, body: #"{"a": 2}"#))
        #expect(inbox.get("m").inboxBody == again.inboxBody)
    }
}

// MARK: - POST /inbox

@Suite struct InboxPostTests {
    static func isLowercaseUUIDv4(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12],
            text.allSatisfy({ $0 == "-" || ("0"..."9").contains($0) || ("a"..."f").contains($0) })
        else { return false }
        return groups[2].first == "4" && "89ab".contains(groups[3].first!)
    }

    @Test func postStoresUnderAFreshUUIDWithLocation() throws {
        let inbox = try InboxSandbox()
        let response = inbox.post(#"{"kind": "weight"}"#, version: "2", device: "phone")
        #expect(response.status == 201)
        let location = try #require(response.header("Location"))
        #expect(location.hasPrefix("/inbox/"))
        let id = String(location.dropFirst("/inbox/".count))
        #expect(Self.isLowercaseUUIDv4(id), "\(id)")
        let expected = InboxSandbox.envelope(id, version: 2, seq: 1, source: "phone", body: #"{"kind": "weight"}"#)
        #expect(response.inboxBody == expected)
        #expect(inbox.send("GET", location).inboxBody == expected)
        #expect(inbox.messageFiles() == [id + ".json"])
    }

    @Test func everyPostGetsItsOwnID() throws {
        let inbox = try InboxSandbox()
        let locations = (0..<20).compactMap { _ in inbox.post("{}").header("Location") }
        #expect(Set(locations).count == 20)
        #expect(inbox.messageFiles().count == 20)
    }
}

// MARK: - GET and DELETE /inbox/<id>

@Suite struct InboxReadAndDeleteTests {
    @Test func getReturnsTheStoredEnvelope() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", #"{"a": [1, 2]}"#, version: "9", device: "phone")
        let response = inbox.get("m")
        #expect(response.status == 200)
        #expect(response.header("Location") == nil)
        #expect(response.inboxBody
            == InboxSandbox.envelope("m", version: 9, seq: 1, source: "phone", body: #"{"a": [1, 2]}"#))
    }

    @Test func getOfAnUnknownIDIs404() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.get("n")
        #expect(response.status == 404)
        #expect(response.inboxBody == InboxSandbox.error("no message with this id"))
    }

    @Test func deleteAnswers204ThenTheMessageIsGone() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}", version: "4")
        let delete = inbox.delete("m", device: "mirror-1")
        #expect(delete.status == 204)
        #expect(delete.body == [])
        let get = inbox.get("m")
        #expect(get.status == 404)
        #expect(get.inboxBody == InboxSandbox.error("no message with this id"))
        let again = inbox.delete("m")
        #expect(again.status == 404)
        #expect(again.inboxBody == InboxSandbox.error("no message with this id"))
        // The tombstone keeps the id, version and deleter, with its own seq.
        #expect(inbox.messageText("m") == """
            {"id": "m", "version": 4, "seq": 2, "source": "mirror-1", \
            "serverReceivedAt": "\(InboxSandbox.stamp)", "deleted": true}
            """)
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
    }

    @Test func deleteOfAnUnknownIDIs404AndWritesNothing() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.delete("n").status == 404)
        #expect(inbox.logSize() == 2 * ChangeLog.recordSize)
        #expect(inbox.messageFiles() == ["m.json"])
    }

    @Test func aDeletionAppearsInTheFeedAsIDAndSeq() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        _ = inbox.delete("m")
        let generation = try inbox.generation()
        #expect(inbox.feed().inboxBody == """
            {"messages": [], "deleted": [{"id": "m", "seq": 2}], "anchor": "\(generation).2", "hasMore": false}
            """)
        #expect(inbox.feed("anchor=\(generation).1").inboxBody == """
            {"messages": [], "deleted": [{"id": "m", "seq": 2}], "anchor": "\(generation).2", "hasMore": false}
            """)
    }

    @Test func aDamagedMessageFileIsA500NotACrash() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        _ = inbox.put("n", "{}")
        // Garbage, and a valid envelope copied under another id.
        try Data("{\"id\": ".utf8).write(to: URL(fileURLWithPath: inbox.messagesPath + "/m.json"))
        try Data(try #require(inbox.messageText("n")).utf8)
            .write(to: URL(fileURLWithPath: inbox.messagesPath + "/o.json"))
        let expected = InboxSandbox.error("a stored message is damaged; see the server log")
        for response in [inbox.get("m"), inbox.get("o"), inbox.put("m", "{}"), inbox.feed()] {
            #expect(response.status == 500)
            #expect(response.inboxBody == expected)
        }
    }

    @Test func aDamagedLogHeaderIsA500NotACrash() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        var bytes = inbox.logBytes()
        bytes.replaceSubrange(0..<9, with: Array("GARBAGE!!".utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: inbox.logPath))
        let expected = InboxSandbox.error("the inbox's change log is damaged; see the server log")
        for response in [inbox.feed(), inbox.put("n", "{}")] {
            #expect(response.status == 500)
            #expect(response.inboxBody == expected)
        }
        #expect(inbox.get("m").status == 200)
    }
}

// MARK: - Methods, paths, keys

@Suite struct InboxRequestShapeTests {
    @Test(arguments: [
        ("POST", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("PATCH", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("OPTIONS", "/inbox/x", "GET, HEAD, PUT, DELETE"),
        ("PUT", "/inbox", "GET, HEAD, POST"),
        ("PATCH", "/inbox", "GET, HEAD, POST"),
        ("DELETE", "/inbox", "GET, HEAD, POST"),
    ])
    func unservedMethodIs405WithAllow(method: String, path: String, allow: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.send(method, path, body: Array("{}".utf8))
        #expect(response.status == 405)
        #expect(response.header("Allow") == allow)
        #expect(response.inboxBody == InboxSandbox.error("method \(method) not allowed on \(path); allowed: \(allow)"))
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
    }

    @Test(arguments: ["/", "/inboxes", "/inbox-x", "/Inbox", "/user/settings", "/inbox.json", ""])
    func pathsTheRouteDoesNotServeAre404(path: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.send("GET", path)
        #expect(response.status == 404)
        #expect(response.inboxBody == InboxSandbox.error("not found"))
    }

    @Test(arguments: [("GET", "/inbox"), ("POST", "/inbox"), ("GET", "/inbox/m"), ("PUT", "/inbox/m"), ("DELETE", "/inbox/m")])
    func missingOrInvalidUserKeyIs400AndTouchesNothing(method: String, path: String) throws {
        let inbox = try InboxSandbox()
        let body = Array("{}".utf8)
        for key in [nil, ""] as [String?] {
            let response = inbox.send(method, path, body: body, userKey: key)
            #expect(response.status == 400)
            #expect(response.inboxBody == InboxSandbox.error("X-User-Key header required"))
        }
        for key in ["../user-1", "a b", "user.1", String(repeating: "k", count: 129)] {
            let response = inbox.send(method, path, body: body, userKey: key)
            #expect(response.status == 400)
            #expect(response.inboxBody == InboxSandbox.error("invalid X-User-Key shape"))
        }
        #expect(InboxSandbox.entries(inbox.root) == [])
    }

    @Test func keysDoNotSeeEachOthersMessages() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.send("GET", "/inbox/m", userKey: "other").status == 404)
        #expect(inbox.send("GET", "/inbox", userKey: "other").inboxBody
            == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
        #expect(inbox.send("DELETE", "/inbox/m", userKey: "other").status == 404)
        #expect(inbox.get("m").status == 200)
        #expect(InboxSandbox.entries(inbox.root + "/inbox").contains(InboxSandbox.key))
    }

    @Test func aDeleteThatFindsNothingInAnUnusedInboxWritesNothing() throws {
        let inbox = try InboxSandbox()
        #expect(inbox.delete("m").status == 404)
        #expect(!FileManager.default.fileExists(atPath: inbox.root + "/inbox"))
        #expect(inbox.feed().inboxBody == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
    }
}

// MARK: - The change feed

@Suite struct InboxFeedTests {
    @Test func anEmptyInboxWithoutAnchorHasAnEmptyFeed() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed()
        #expect(response.status == 200)
        #expect(response.inboxBody == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
        #expect(inbox.feed("anchor=0.0.0&limit=5").inboxBody == response.inboxBody)
        #expect(!FileManager.default.fileExists(atPath: inbox.inboxPath))
    }

    @Test func feedWithoutAnchorListsEveryIDOnceInItsLatestStateOldestFirst() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", #"{"v": 1}"#)
        _ = inbox.put("b", #"{"v": 1}"#)
        _ = inbox.put("c", #"{"v": 1}"#, device: "phone")
        _ = inbox.put("a", #"{"v": 2}"#, version: "1")
        _ = inbox.delete("b")
        _ = inbox.put("d", #"{"v": 1}"#)
        let generation = try inbox.generation()
        let c = InboxSandbox.envelope("c", seq: 3, source: "phone", body: #"{"v": 1}"#)
        let a = InboxSandbox.envelope("a", version: 1, seq: 4, body: #"{"v": 2}"#)
        let d = InboxSandbox.envelope("d", seq: 6, body: #"{"v": 1}"#)
        #expect(inbox.feed().inboxBody == """
            {"messages": [\(c), \(a), \(d)], "deleted": [{"id": "b", "seq": 5}], \
            "anchor": "\(generation).6", "hasMore": false}
            """)
        // From an anchor, only what came after it.
        #expect(inbox.feed("anchor=\(generation).4").inboxBody == """
            {"messages": [\(d)], "deleted": [{"id": "b", "seq": 5}], "anchor": "\(generation).6", "hasMore": false}
            """)
        // At the newest anchor: nothing, and the anchor stays.
        #expect(inbox.feed("anchor=\(generation).6").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).6", "hasMore": false}
            """)
    }

    @Test(arguments: [1, 2, 3, 5, 9, 10, 11, 1000])
    func pagingWithLimitReturnsEveryChangeExactlyOnceAndHasMoreIsExact(limit: Int) throws {
        let inbox = try InboxSandbox()
        let ids = (0..<10).map { "m\($0)" }
        for id in ids { _ = inbox.put(id, #"{"first": true}"#) }
        // Replacements move three ids to the end; a deletion adds a tombstone.
        for id in ["m2", "m5", "m0"] { _ = inbox.put(id, #"{"first": false}"#) }
        _ = inbox.delete("m7")
        // Oldest first, by seq: m1 m3 m4 m6 m8 m9 m2 m5 m0 (-m7).
        let expectedOrder = ["m1", "m3", "m4", "m6", "m8", "m9", "m2", "m5", "m0", "-m7"]

        var anchor: String?
        var order: [String] = []
        var pages = 0
        while true {
            let response = inbox.feed("limit=\(limit)" + (anchor.map { "&anchor=" + $0 } ?? ""))
            try #require(response.status == 200)
            let page = try response.inboxObject()
            let messages = InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
            let deleted = InboxJSON.array(page["deleted"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
            let hasMore = page["hasMore"] == .bool(true)
            order += messages + deleted.map { "-" + $0 }
            pages += 1
            let remaining = expectedOrder.count - order.count
            // hasMore exactly when something is left; every page but the last is full.
            #expect(hasMore == (remaining > 0), "page \(pages)")
            #expect(messages.count + deleted.count == (hasMore ? limit : min(limit, expectedOrder.count - (pages - 1) * limit)))
            let next = try #require(InboxJSON.string(page["anchor"]))
            anchor = next
            if !hasMore || pages > 20 { break }
        }
        #expect(pages == (expectedOrder.count + limit - 1) / limit)
        // Within a page messages and deletions are listed apart; across pages, order holds.
        #expect(order.filter { !$0.hasPrefix("-") } == expectedOrder.filter { !$0.hasPrefix("-") })
        #expect(Set(order) == Set(expectedOrder))
        #expect(order.count == expectedOrder.count)
        let generation = try inbox.generation()
        #expect(anchor == "\(generation).14")
        #expect(inbox.feed("limit=\(limit)&anchor=\(try #require(anchor))").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).14", "hasMore": false}
            """)
    }

    @Test func defaultLimitIs100() throws {
        let inbox = try InboxSandbox()
        for i in 0..<101 { _ = inbox.put("m\(i)", "{}") }
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).count == 100)
        #expect(page["hasMore"] == .bool(true))
        #expect(page["anchor"] == .string("\(try inbox.generation()).100"))
        let rest = try inbox.feed("anchor=\(try inbox.generation()).100").inboxObject()
        #expect(InboxJSON.array(rest["messages"]).count == 1)
        #expect(rest["hasMore"] == .bool(false))
    }

    @Test(arguments: ["1", "2", "1000"])
    func limitFrom1To1000IsAccepted(limit: String) throws {
        let inbox = try InboxSandbox()
        for id in ["a", "b"] { _ = inbox.put(id, "{}") }
        let response = inbox.feed("limit=\(limit)")
        #expect(response.status == 200)
        let page = try response.inboxObject()
        #expect(InboxJSON.array(page["messages"]).count == min(Int(limit)!, 2))
    }

    @Test(arguments: ["0", "1001", "abc", "-1", "", "+5", "1e2", " 1", "1000.0", "99999999999999999999"])
    func limitOutside1To1000IsRejected(limit: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.feed("limit=" + (limit.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? limit))
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "invalid limit \\\"\(limit)\\\": must be an integer from 1 to 1000"))
    }

    @Test(arguments: [
        "xyz", "1", "zz.1", "a.b", ".1", "1.", "a.1", "a.1.2.3", "A.0.1", "00000000000000000.0.1", "a.0.-1", "a.0.+1",
        "a.0.99999999999999999999", "a.0. 1", "0x1.0.1", "a..1", "a.x.1",
    ])
    func malformedAnchorIsRejected(anchor: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.feed("anchor=" + (anchor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? anchor))
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "malformed anchor: pass back exactly the anchor a previous page returned"))
    }

    @Test func malformedQueryIsRejected() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("anchor=%zz")
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error("malformed query string"))
    }

    @Test func anAnchorNewerThanAnythingStoredIs410() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        let generation = try inbox.generation()
        #expect(inbox.feed("anchor=\(generation).2").status == 200)
        for anchor in ["\(generation).3", "\(generation).999999999999999999"] {
            let response = inbox.feed("anchor=" + anchor)
            #expect(response.status == 410)
            #expect(response.inboxBody == InboxSandbox.error(
                "anchor is newer than anything stored; restart without an anchor"))
        }
    }

    @Test func anAnchorOnAnInboxThatHoldsNothingIs410() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("anchor=0123456789abcdef.0.3")
        #expect(response.status == 410)
        #expect(response.inboxBody.hasSuffix("restart without an anchor\"}"))
    }

    @Test func anAnchorOfAWipedAndRecreatedInboxIs410() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        let old = try inbox.generation()
        try inbox.wipeInbox()
        for id in ["x", "y", "z"] { _ = inbox.put(id, "{}") }
        let new = try inbox.generation()
        #expect(new != old)
        let response = inbox.feed("anchor=\(old).1")
        #expect(response.status == 410)
        #expect(response.inboxBody == InboxSandbox.error(
            "anchor belongs to an inbox that no longer exists; restart without an anchor"))
        let fresh = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(fresh["messages"]).count == 3)
        #expect(fresh["anchor"] == .string("\(new).3"))
        #expect(inbox.feed("anchor=\(new).1").status == 200)
    }

    @Test func excludeSourceLeavesOutThatDevicesMessagesButAdvancesTheAnchor() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m1", "{}", device: "dev-a")
        _ = inbox.put("m2", "{}", device: "dev-b")
        _ = inbox.put("m3", "{}", device: "dev-a")
        _ = inbox.put("m4", "{}")
        let generation = try inbox.generation()
        let m2 = InboxSandbox.envelope("m2", seq: 2, source: "dev-b", body: "{}")
        let m4 = InboxSandbox.envelope("m4", seq: 4, body: "{}")
        #expect(inbox.feed("exclude-source=dev-a").inboxBody == """
            {"messages": [\(m2), \(m4)], "deleted": [], "anchor": "\(generation).4", "hasMore": false}
            """)
        // One at a time: an excluded change neither fills a slot nor holds the anchor back.
        #expect(inbox.feed("exclude-source=dev-a&limit=1").inboxBody == """
            {"messages": [\(m2)], "deleted": [], "anchor": "\(generation).3", "hasMore": true}
            """)
        #expect(inbox.feed("exclude-source=dev-a&limit=1&anchor=\(generation).3").inboxBody == """
            {"messages": [\(m4)], "deleted": [], "anchor": "\(generation).4", "hasMore": false}
            """)
        // Only the device's own echoes after the anchor: an empty page past them.
        _ = inbox.put("m5", "{}", device: "dev-a")
        #expect(inbox.feed("exclude-source=dev-a&anchor=\(generation).4").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).5", "hasMore": false}
            """)
        // Another device, or no exclusion, sees it.
        #expect(inbox.feed("exclude-source=dev-b&anchor=\(generation).4").inboxBody == """
            {"messages": [\(InboxSandbox.envelope("m5", seq: 5, source: "dev-a", body: "{}"))], "deleted": [], \
            "anchor": "\(generation).5", "hasMore": false}
            """)
        // A deletion is not a message: the device's own deletions are still reported.
        _ = inbox.delete("m2", device: "dev-a")
        #expect(inbox.feed("exclude-source=dev-a&anchor=\(generation).5").inboxBody == """
            {"messages": [], "deleted": [{"id": "m2", "seq": 6}], "anchor": "\(generation).6", "hasMore": false}
            """)
    }

    @Test func hasMoreIsFalseWhenOnlyTheReadersOwnEchoesRemain() throws {
        // Exact hasMore (CONTRACT 4) also holds past a long run of excluded changes.
        let inbox = try InboxSandbox()
        _ = inbox.put("other", "{}", device: "dev-b")
        for i in 0..<150 { _ = inbox.put("echo", #"{"n": \#(i)}"#, device: "dev-a") }
        let generation = try inbox.generation()
        let response = inbox.feed("exclude-source=dev-a&limit=1&anchor=\(generation).1")
        #expect(response.status == 200)
        let page = try response.inboxObject()
        #expect(InboxJSON.array(page["messages"]).isEmpty)
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["hasMore"] == .bool(false), "\(response.inboxBody)")
    }

    @Test(arguments: ["", "a%20b", "caf%C3%A9", "a%2Fb", "a.b", String(repeating: "d", count: 129)])
    func invalidExcludeSourceIsRejected(device: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("exclude-source=" + device)
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error("invalid exclude-source shape"))
    }

    @Test func feedAnswersAreTheSameForHEAD() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.send("HEAD", "/inbox").inboxBody == inbox.feed().inboxBody)
        #expect(inbox.send("HEAD", "/inbox/m").inboxBody == inbox.get("m").inboxBody)
    }
}

// MARK: - A reader following anchors, against a model

/// SplitMix64: a fixed seed gives the same sequence on every run.
struct InboxSeededRandom: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An anchored reader as a client keeps one: its anchor and what it knows.
struct InboxFeedReader {
    let excluded: String?
    var anchor: String?
    /// id → the envelope text the feed gave.
    var state: [String: String] = [:]
    /// `id@seq` of every change received since the last restart: none twice.
    var received: Set<String> = []
    var restarts = 0

    init(excluding excluded: String? = nil) { self.excluded = excluded }

    /// Reads one page; returns `hasMore`. A 410 (compaction dropped deletions
    /// the reader has not seen) restarts the reader, as a client would.
    mutating func readPage(_ inbox: InboxSandbox, limit: Int) throws -> Bool {
        var query = "limit=\(limit)"
        if let anchor { query += "&anchor=" + anchor }
        if let excluded { query += "&exclude-source=" + excluded }
        let response = inbox.feed(query)
        if response.status == 410, anchor != nil {
            (anchor, state, received) = (nil, [:], [])
            restarts += 1
            return true
        }
        try #require(response.status == 200, "\(response.inboxBody)")
        let page = try response.inboxObject()
        let previous = anchor.flatMap { Int64($0.split(separator: ".").last ?? "") } ?? 0
        var lastSeq = previous
        var ids: Set<String> = []
        let messages = InboxJSON.array(page["messages"])
        let deleted = InboxJSON.array(page["deleted"])
        #expect(messages.count + deleted.count <= limit)
        for message in messages {
            let object = try #require(message.objectValue)
            let id = try #require(InboxJSON.string(object["id"]))
            let seq = try #require(InboxJSON.int(object["seq"]))
            #expect(seq > lastSeq, "messages oldest first, after the anchor")
            lastSeq = seq
            #expect(ids.insert(id).inserted, "\(id) twice in one page")
            #expect(received.insert("\(id)@\(seq)").inserted, "\(id)@\(seq) received twice")
            if let excluded { #expect(InboxJSON.string(object["source"]) != excluded) }
            state[id] = InboxJSON.text(message)
        }
        for deletion in deleted {
            let object = try #require(deletion.objectValue)
            let id = try #require(InboxJSON.string(object["id"]))
            let seq = try #require(InboxJSON.int(object["seq"]))
            #expect(seq > previous)
            #expect(ids.insert(id).inserted, "\(id) twice in one page")
            #expect(received.insert("\(id)@\(seq)").inserted, "\(id)@\(seq) received twice")
            state[id] = nil
        }
        let next = try #require(InboxJSON.string(page["anchor"]))
        let nextSeq = try #require(Int64(next.split(separator: ".").last ?? ""))
        #expect(nextSeq >= previous)
        anchor = next
        return page["hasMore"] == .bool(true)
    }

    /// Follows anchors until hasMore is false, then checks that it was exact.
    mutating func drain(_ inbox: InboxSandbox, limit: Int) throws {
        var pages = 0
        while try readPage(inbox, limit: limit) {
            pages += 1
            try #require(pages < 1000, "the reader never reached hasMore false; last anchor \(anchor ?? "none")")
        }
        let settled = anchor
        #expect(try readPage(inbox, limit: limit) == false)
        #expect(anchor == settled, "hasMore was false but more came")
    }
}

/// The compaction settings a model run uses.
enum InboxModelVariant: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case noCompaction, compactionKeepingTombstones, compactionDroppingTombstones

    var settings: InboxSettings {
        var settings = InboxSettings()
        settings.maxMessages = 6
        switch self {
        case .noCompaction: break
        case .compactionKeepingTombstones:
            settings.compactionMinimumRecords = 8
            settings.tombstoneHorizonSeconds = 86400
        case .compactionDroppingTombstones:
            settings.compactionMinimumRecords = 8
            settings.tombstoneHorizonSeconds = 0
        }
        return settings
    }

    var testDescription: String { rawValue }
}

@Suite struct InboxFeedModelTests {
    /// What the store should hold for one id.
    struct Expected {
        var version: Int64
        var body: String
        var source: String?
        /// The envelope text the write answered with; nil once deleted.
        var envelope: String?
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64], InboxModelVariant.allCases)
    func readersFollowingAnchorsEndWithTheSameStateAsAFullRead(seed: UInt64, variant: InboxModelVariant) throws {
        let settings = variant.settings
        let inbox = try InboxSandbox(settings: settings, clockStep: 1_000_000)
        var random = InboxSeededRandom(state: seed)
        var model: [String: Expected] = [:]
        var lastSeq: Int64 = 0
        var counter = 0
        var readers = [InboxFeedReader(), InboxFeedReader(excluding: "dev-a")]
        let ids = (0..<10).map { "m\($0)" }
        let devices: [String?] = [nil, "dev-a", "dev-b"]

        func live() -> Int { model.values.filter { $0.envelope != nil }.count }

        for step in 0..<300 {
            let roll = Int.random(in: 0..<100, using: &random)
            let device = devices.randomElement(using: &random)!
            if roll < 50 {
                let id = ids.randomElement(using: &random)!
                let current = model[id]
                var version = Int64.random(in: 0...3, using: &random)
                counter += 1
                var body = #"{"n": \#(counter)}"#
                if let current, current.envelope != nil {
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: version = current.version - 1
                    case 1: (version, body) = (current.version, current.body)
                    case 2: version = current.version
                    default: version = current.version + Int64.random(in: 1...2, using: &random)
                    }
                    version = max(version, 0)
                }
                let response = inbox.put(id, body, version: String(version), device: device)
                let isLive = current?.envelope != nil
                if !isLive && live() >= settings.maxMessages {
                    #expect(response.status == 507, "step \(step)")
                } else if isLive && version < current!.version {
                    #expect(response.status == 409, "step \(step)")
                } else if isLive && version == current!.version && body == current!.body {
                    #expect(response.status == 200, "step \(step)")
                    #expect(response.inboxBody == current!.envelope, "step \(step): a retry changes nothing")
                } else {
                    #expect(response.status == (isLive ? 200 : 201), "step \(step)")
                    lastSeq += 1
                    let object = try response.inboxObject()
                    #expect(InboxJSON.int(object["seq"]) == lastSeq, "step \(step)")
                    model[id] = Expected(version: version, body: body, source: device, envelope: response.inboxBody)
                }
            } else if roll < 65 {
                let id = ids.randomElement(using: &random)!
                let response = inbox.delete(id, device: device)
                if model[id]?.envelope != nil {
                    #expect(response.status == 204, "step \(step)")
                    lastSeq += 1
                    model[id]?.envelope = nil
                } else {
                    #expect(response.status == 404, "step \(step)")
                }
            } else if roll < 70 {
                let id = ids.randomElement(using: &random)!
                let response = inbox.get(id)
                if let envelope = model[id]?.envelope {
                    #expect(response.inboxBody == envelope, "step \(step)")
                } else {
                    #expect(response.status == 404, "step \(step)")
                }
            } else {
                let which = Int.random(in: 0..<readers.count, using: &random)
                _ = try readers[which].readPage(inbox, limit: Int.random(in: 1...4, using: &random))
            }
        }

        var everyone = readers + [InboxFeedReader()]
        for index in everyone.indices {
            try everyone[index].drain(inbox, limit: index == everyone.count - 1 ? 1000 : 3)
        }
        let latest = model.compactMapValues(\.envelope)
        #expect(everyone[0].state == latest)
        #expect(everyone[2].state == latest)
        #expect(everyone[2].restarts == 0)
        // The echo-free reader: everything not last written by dev-a, exactly.
        let echoFree = everyone[1].state
        for (id, expected) in model where expected.source != "dev-a" || expected.envelope == nil {
            #expect(echoFree[id] == expected.envelope, "\(id)")
        }
        #expect(Set(echoFree.keys).isSubset(of: Set(latest.keys)))
        for (id, envelope) in latest { #expect(inbox.get(id).inboxBody == envelope) }
        if variant == .noCompaction {
            #expect(inbox.logSize() == Int(lastSeq + 1) * ChangeLog.recordSize)
            #expect(everyone[0].restarts == 0 && everyone[1].restarts == 0)
        }
        if variant == .compactionKeepingTombstones {
            #expect(everyone[0].restarts == 0 && everyone[1].restarts == 0)
        }
        // Seq never goes back, whatever compaction removed.
        #expect(inbox.put("after-all", "{}").status == (live() < settings.maxMessages ? 201 : 507))
        if live() < settings.maxMessages {
            #expect(InboxJSON.int(try inbox.get("after-all").inboxObject()["seq"]) == lastSeq + 1)
        }
    }
}

// MARK: - Compaction

@Suite struct InboxCompactionTests {
    static func settings(horizon: Int64) -> InboxSettings {
        var settings = InboxSettings()
        settings.compactionMinimumRecords = 8
        settings.tombstoneHorizonSeconds = horizon
        return settings
    }

    /// Eight changes: a, b and c written, a and b replaced, a replaced again,
    /// c deleted, a replaced a third time (seq 8): the eighth triggers compaction.
    static func writeEightChanges(_ inbox: InboxSandbox) {
        _ = inbox.put("a", #"{"v": 1}"#)
        _ = inbox.put("b", #"{"v": 1}"#)
        _ = inbox.put("c", #"{"v": 1}"#)
        _ = inbox.put("a", #"{"v": 2}"#)
        _ = inbox.put("b", #"{"v": 2}"#)
        _ = inbox.put("a", #"{"v": 3}"#)
        _ = inbox.delete("c")
        _ = inbox.put("a", #"{"v": 4}"#)
    }

    @Test func theLogGrowsUntilItHoldsTheMinimumNumberOfRecords() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        for i in 1...7 {
            _ = inbox.put("a", #"{"v": \#(i)}"#)
            #expect(inbox.logSize() == (i + 1) * ChangeLog.recordSize)
        }
    }

    @Test func compactionKeepsOneRecordPerLiveMessageAndDropsExpiredTombstones() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let generation = try inbox.generation()
        // b (seq 5) and a (seq 8) are live; c's tombstone (seq 7) has expired.
        #expect(inbox.logSize() == 3 * ChangeLog.recordSize)
        let raw = try inbox.rawGeneration()
        // The compaction dropped a deletion, so the epoch (last field) moved to 1.
        #expect(inbox.logHeaderText() == "MOCKCLOUD-INBOX-LOG 1 \(raw) "
            + "00000000000000000007 00000000000000000008 00000000000000000002 00000000000000000001")
        #expect(inbox.messageFiles() == ["a.json", "b.json"])
        let records = String(decoding: inbox.logBytes().dropFirst(ChangeLog.recordSize), as: UTF8.self)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(records == ["00000000000000000005 P 0000000001 b", "00000000000000000008 P 0000000002 a"])

        // A fresh read works and shows the live messages, oldest first.
        let page = try inbox.feed().inboxObject()
        let ids = InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
        #expect(ids == ["b", "a"])
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["anchor"] == .string("\(generation).8"))

        // A reader that may not have seen c's deletion (an anchor issued before
        // the compaction, below the dropped seq) must restart; one that has may go on.
        for seq in [1, 6] {
            let response = inbox.feed("anchor=\(raw).0.\(seq)")
            #expect(response.status == 410)
            #expect(response.inboxBody == InboxSandbox.error(
                "anchor is older than the deletions this inbox still keeps; restart without an anchor"))
        }
        #expect(inbox.feed("anchor=\(raw).0.7").status == 200)
        let onward = try inbox.feed("anchor=\(generation).7").inboxObject()
        #expect(InboxJSON.array(onward["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a"])

        // Seq keeps increasing, and the id of an expired tombstone is new again.
        let next = inbox.put("c", #"{"v": 5}"#)
        #expect(next.status == 201)
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 9)
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        #expect(inbox.get("b").status == 200)
    }

    @Test func aFreshReaderPagingAfterCompactionReachesTheEnd() throws {
        // After compaction, a live message can have a lower seq than the
        // tombstones it dropped; a reader starting afresh pages through it.
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let first = try inbox.feed("limit=1").inboxObject()
        #expect(InboxJSON.array(first["messages"]).map(InboxJSON.text) == [inbox.get("b").inboxBody])
        #expect(first["hasMore"] == .bool(true))
        let anchor = try #require(InboxJSON.string(first["anchor"]))
        let second = inbox.feed("limit=1&anchor=" + anchor)
        #expect(second.status == 200, "after anchor \(anchor): \(second.inboxBody)")
        let page = try second.inboxObject()
        #expect(InboxJSON.array(page["messages"]).map(InboxJSON.text) == [inbox.get("a").inboxBody])
        #expect(page["hasMore"] == .bool(false))
    }

    @Test func tombstonesWithinTheHorizonSurviveCompaction() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 3600), clockStep: 1_000_000)
        Self.writeEightChanges(inbox)
        let generation = try inbox.generation()
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        #expect(inbox.logHeaderText() == "MOCKCLOUD-INBOX-LOG 1 \(try inbox.rawGeneration()) "
            + "00000000000000000000 00000000000000000008 00000000000000000003 00000000000000000000")
        #expect(inbox.messageFiles() == ["a.json", "b.json", "c.json"])
        // An old anchor is still answerable and learns of the deletion.
        let page = try inbox.feed("anchor=\(generation).1").inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["b", "a"])
        #expect(InboxJSON.text(.array(InboxJSON.array(page["deleted"]))) == #"[{"id": "c", "seq": 7}]"#)
    }

    @Test func compactionRunsAgainOnlyOnceTheLogHasDoubled() throws {
        var settings = Self.settings(horizon: 0)
        settings.compactionMinimumRecords = 4
        let inbox = try InboxSandbox(settings: settings, clockStep: 1_000_000)
        for id in ["a", "b", "c", "d"] { _ = inbox.put(id, "{}") }
        // Four live messages: compaction keeps four records, the next waits for eight.
        #expect(inbox.logSize() == 5 * ChangeLog.recordSize)
        for i in 1...3 {
            _ = inbox.put("a", #"{"v": \#(i)}"#)
            #expect(inbox.logSize() == (5 + i) * ChangeLog.recordSize)
        }
        _ = inbox.put("a", #"{"v": 4}"#)
        #expect(inbox.logSize() == 5 * ChangeLog.recordSize)
        #expect(inbox.logHeaderText().hasSuffix(
            "00000000000000000000 00000000000000000008 00000000000000000004 00000000000000000000"))
    }

    @Test func aReaderMidwayContinuesAcrossACompactionThatKeptTombstones() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 3600), clockStep: 1_000_000)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        var reader = InboxFeedReader()
        #expect(try reader.readPage(inbox, limit: 1) == true)
        for i in 1...6 { _ = inbox.put("b", #"{"v": \#(i)}"#) }
        // Compacted to a (1) and b (8) at the eighth change; then a's deletion (9).
        _ = inbox.delete("a")
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        try reader.drain(inbox, limit: 1)
        #expect(reader.restarts == 0)
        #expect(reader.state == ["b": inbox.get("b").inboxBody])
    }

    @Test func compactionThatDropsEverythingKeepsSeqAndServesAFreshRead() throws {
        let inbox = try InboxSandbox(settings: Self.settings(horizon: 0), clockStep: 1_000_000)
        for id in ["a", "b", "c", "d"] {
            _ = inbox.put(id, "{}")
            _ = inbox.delete(id)
        }
        let generation = try inbox.generation()
        #expect(inbox.logSize() == ChangeLog.recordSize)
        #expect(inbox.messageFiles() == [])
        #expect(inbox.feed().inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).0", "hasMore": false}
            """)
        #expect(inbox.feed("anchor=\(generation).8").status == 200)
        #expect(inbox.feed("anchor=\(generation).9").status == 410)
        // Issued before the compaction (epoch 0) and below the deletions it dropped.
        #expect(inbox.feed("anchor=\(try inbox.rawGeneration()).0.7").status == 410)
        let next = inbox.put("a", "{}")
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 9)
    }
}

// MARK: - Limits

@Suite struct InboxLimitTests {
    static func inbox(max: Int, compactAfter: Int = 1024) throws -> InboxSandbox {
        var settings = InboxSettings()
        settings.maxMessages = max
        settings.compactionMinimumRecords = compactAfter
        return try InboxSandbox(settings: settings, clockStep: 1_000_000)
    }

    @Test func aNewMessageBeyondMaxMessagesIs507AndStoresNothing() throws {
        let inbox = try Self.inbox(max: 3)
        for id in ["a", "b", "c"] { #expect(inbox.put(id, "{}").status == 201) }
        let logBefore = inbox.logBytes()
        let full = inbox.put("d", "{}")
        #expect(full.status == 507)
        #expect(full.inboxBody == InboxSandbox.error("inbox full: this key already holds 3 messages; delete some first"))
        #expect(inbox.post("{}").status == 507)
        #expect(inbox.logBytes() == logBefore)
        #expect(inbox.messageFiles() == ["a.json", "b.json", "c.json"])

        // Replacing a stored message is not a new one.
        #expect(inbox.put("a", #"{"v": 2}"#).status == 200)
        // After a deletion a new one fits; a deleted id counts as new.
        #expect(inbox.delete("b").status == 204)
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("b", "{}").status == 507)
        #expect(inbox.put("e", "{}").status == 507)
        #expect(inbox.delete("c").status == 204)
        #expect(inbox.put("b", "{}").status == 201)
    }

    @Test func theLimitHoldsAcrossCompaction() throws {
        let inbox = try Self.inbox(max: 3, compactAfter: 4)
        for id in ["a", "b", "c"] { _ = inbox.put(id, "{}") }
        for i in 1...5 { _ = inbox.put("a", #"{"v": \#(i)}"#) }
        #expect(inbox.put("d", "{}").status == 507)
        _ = inbox.delete("a")
        for i in 1...5 { _ = inbox.put("b", #"{"v": \#(i)}"#) }
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("e", "{}").status == 507)
    }
}

// MARK: - Crash recovery

@Suite struct InboxCrashRecoveryTests {
    static let damagedTails: [[UInt8]] = [
        Array(repeating: UInt8(ascii: "x"), count: 100),
        Array(repeating: 0, count: 256),
        Array(repeating: 0, count: 300),
        // A record cut short, and one whose second half never reached the disk.
        Array(("00000000000000000003 P 0000000003 c" + String(repeating: " ", count: 219) + "\n").utf8),
        Array("00000000000000000003 P 0000000003 c".utf8) + Array(repeating: 0x20, count: 93)
            + Array(repeating: 0, count: 128),
    ]

    @Test(arguments: InboxCrashRecoveryTests.damagedTails)
    func aDamagedLogTailIsIgnoredByReadersAndCutByTheNextWrite(tail: [UInt8]) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        let before = inbox.feed().inboxBody
        try inbox.appendToLog(tail)
        #expect(inbox.feed().inboxBody == before)
        #expect(inbox.get("a").status == 200)

        let next = inbox.put("c", "{}")
        #expect(next.status == 201)
        #expect(InboxJSON.int(try next.inboxObject()["seq"]) == 3)
        #expect(inbox.logSize() == 4 * ChangeLog.recordSize)
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a", "b", "c"])
        #expect(page["anchor"] == .string("\(try inbox.generation()).3"))
    }

    @Test func recordsWithoutTheirMessagesLeaveTheOldStateVisible() throws {
        let inbox = try InboxSandbox()
        let a = inbox.put("a", #"{"v": 1}"#)
        let b = inbox.put("b", #"{"v": 1}"#)
        let generation = try inbox.generation()
        // Interrupted: a new message c, a replacement of a, a deletion of b.
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        try inbox.appendOrphanRecord(seq: 4, live: 2, id: "a")
        try inbox.appendOrphanRecord(seq: 5, deleted: true, live: 2, id: "b")

        #expect(inbox.get("c").status == 404)
        #expect(inbox.get("a").inboxBody == a.inboxBody)
        #expect(inbox.get("b").inboxBody == b.inboxBody)
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) } == ["a", "b"])
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["anchor"] == .string("\(generation).5"))
        #expect(page["hasMore"] == .bool(false))

        // The next write gets a seq no record has used.
        let c = inbox.put("c", "{}")
        #expect(c.status == 201)
        #expect(InboxJSON.int(try c.inboxObject()["seq"]) == 6)
        #expect(inbox.feed("anchor=\(generation).5").inboxBody == """
            {"messages": [\(c.inboxBody)], "deleted": [], "anchor": "\(generation).6", "hasMore": false}
            """)
        // A retry of the interrupted replacement is a retry of the stored state.
        #expect(inbox.put("a", #"{"v": 1}"#).inboxBody == a.inboxBody)
    }

    @Test func aSingleInterruptedNewMessageDoesNotCountAgainstTheLimit() throws {
        let inbox = try InboxLimitTests.inbox(max: 3)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        #expect(inbox.put("d", "{}").status == 201)
        #expect(inbox.put("e", "{}").status == 507)
    }

    @Test func twoInterruptedNewMessagesInARowDoNotCountAgainstTheLimit() throws {
        // Each failed write (a crash, or a message write refused by a full disk
        // after the log append) leaves a record; the second was counted by the
        // store as it would have been: 2 live (the first record is an orphan) + 1.
        let inbox = try InboxLimitTests.inbox(max: 3)
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        try inbox.appendOrphanRecord(seq: 3, live: 3, id: "c")
        try inbox.appendOrphanRecord(seq: 4, live: 3, id: "d")
        let e = inbox.put("e", "{}")
        #expect(e.status == 201, "\(e.inboxBody)")
        #expect(inbox.put("f", "{}").status == 507)
    }
}
