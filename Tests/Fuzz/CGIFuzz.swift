import Glibc
@testable import MockCloudConfig
@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem
import MockCloudWire

// Requests as nginx + fcgiwrap hand them over: CGI meta-variables plus a body
// on stdin (a pipe), through `CGIProgram.respond` and the route the path names
// (`/inbox…` → InboxRoute, anything else → SettingsRoute), against a data
// directory in tmpfs that every input starts with empty.
//
// Input: up to 4 requests separated by NUL bytes, run in order. A request is
// `NAME=value` lines, a blank line, then the body. CONTENT_LENGTH defaults to
// the body's length. Variables for the harness alone: FUZZ_SIGNED=1 (HMAC on,
// a fixed key), FUZZ_TOKENS=1 (bearer tokens on; the token `fuzz-token`
// passes), FUZZ_CLOCK (the clock, in microseconds), FUZZ_LIMIT (the body
// limit). MOCKCLOUD_DATA, MOCKCLOUD_HMAC_KEYS and MOCKCLOUD_TOKENS from the
// input are dropped (the input never names a path).
//
// Oracles: no crash; every answer has a known status, headers without CR, LF
// or NUL, and a JSON body (an object with an "error" string for 4xx/5xx);
// no 500 except a misconfiguration the input asked for, or an integrity
// failure after the input changed the signing settings; no 507 but a full
// inbox; nothing written outside the data directory, and nothing inside it
// but locks, settings files and inboxes.

/// `<tmpfs>/mockcloud-fuzz.XXXXXX`, holding `data` and nothing else.
nonisolated(unsafe) private var sandbox: String = makeSandbox()
private var dataRoot: String { sandbox + "/data" }
/// FUZZ_VERBOSE=1: keep the library's stderr lines and print each answer
/// (for replaying one input by hand).
private let quiet = getenv("FUZZ_VERBOSE") == nil
private let signingKeys = try! SigningKeys.parse(
    Array("fuzz-1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n".utf8), path: "fuzz")
private let accessTokens = AccessTokens(hashes: [HMACSHA256.sha256([Array("fuzz-token".utf8)])])
/// A wait (`?wait=`) ends at once: its answer would go to a pipe whose
/// reader is already gone, as when fcgiwrap stops. The wait's whole path
/// (the watch, a place counted for the input's `REMOTE_ADDR`, the looks)
/// still runs, in no time.
private let waiting: WaitHost = {
    var fds: [Int32] = [-1, -1]
    require(pipe(&fds) == 0, "pipe: errno \(errno)")
    close(fds[0])
    let gone = FileDescriptor(rawValue: fds[1])
    return WaitHost(allow: { _ in }, answerPaths: { [gone] }, perAddress: ServiceConfig.defaultWaitsPerAddress)
}()
/// 2026-05-18T04:43:04.134233Z, the contract's example.
private let defaultClock: Int64 = 1_779_079_384_134_233

private func makeSandbox() -> String {
    for base in ["/dev/shm", "/tmp"] {
        var template = Array("\(base)/mockcloud-fuzz.XXXXXX".utf8CString)
        if let path = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!).map { String(cString: $0) } }) {
            atexit { removeTree(sandbox) }
            return path
        }
    }
    fatalError("cannot make a temporary directory")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCGI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    mkdir(dataRoot, 0o700)
    var configurations: Set<[Bool]> = []
    for (index, part) in input.split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false).enumerated() {
        var (environment, body) = parseRequest(Array(part))
        let signed = environment["FUZZ_SIGNED"] == "1"
        let requireSigned = environment["MOCKCLOUD_HMAC_REQUIRE"] == "1"
        configurations.insert([signed, requireSigned])
        environment["MOCKCLOUD_DATA"] = dataRoot
        environment["MOCKCLOUD_HMAC_KEYS"] = nil
        environment["MOCKCLOUD_TOKENS"] = nil
        let tokens = environment["FUZZ_TOKENS"] == "1"
        if environment["CONTENT_LENGTH"] == nil { environment["CONTENT_LENGTH"] = body.isEmpty ? "" : String(body.count) }
        let clock = environment["FUZZ_CLOCK"].flatMap { Int64($0) }.map { min(max($0, 0), 253_402_300_799_000_000) }
            ?? defaultClock + Int64(index) * 1_000_000
        let isInbox = (environment["DOCUMENT_URI"] ?? environment["REQUEST_URI"] ?? "").hasPrefix(Endpoint.inbox.path)
        let limit = environment["FUZZ_LIMIT"].flatMap { Int($0) }.map { max($0, 0) }
            ?? (isInbox ? InboxRoute.bodyLimit : SettingsRoute.bodyLimit)
        let cgi = Environment(environment)

        let response = withStdin(body) { stdin in
            CGIProgram.respond(environment: cgi, bodyLimit: limit, stdin: stdin, name: "fuzz") { request in
                touchRequestFields(request)
                if tokens { try accessTokens.authorize(request) }
                let integrity = signed
                    ? Integrity(keys: signingKeys, requireSigned: requireSigned)
                    : try ServiceConfig.integrity(request.environment)
                if request.path.hasPrefix(Endpoint.inbox.path) {
                    let route = InboxRoute(
                        dataRoot: dataRoot, settings: try ServiceConfig.inboxSettings(request.environment),
                        integrity: integrity, clock: { clock }, waiting: waiting)
                    return try route.respond(to: request)
                }
                return try SettingsRoute(dataRoot: dataRoot, integrity: integrity, clock: { clock }, waiting: waiting)
                    .respond(to: request)
            }
        }
        check(response, request: index, signingChanged: configurations.count > 1, input: input)
        checkStored(response, environment, request: index, input: input)
    }
    checkSandbox(input)
    removeTree(dataRoot)
    return 0
}

/// `NAME=value` lines up to the first blank line, then the body.
private func parseRequest(_ bytes: [UInt8]) -> ([String: String], [UInt8]) {
    var end = bytes.count
    var bodyStart = bytes.count
    if bytes.count >= 2 {
        for i in 0..<(bytes.count - 1) where bytes[i] == 0x0A && bytes[i + 1] == 0x0A {
            end = i
            bodyStart = i + 2
            break
        }
    }
    var environment: [String: String] = [:]
    for line in bytes[..<end].split(separator: 0x0A) {
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
        // As `getenv` + `String(cString:)` would hand them over: invalid UTF-8 repaired.
        environment[String(decoding: line[..<equals], as: UTF8.self)] =
            String(decoding: line[(equals + 1)...], as: UTF8.self)
    }
    return (environment, Array(bytes[bodyStart...]))
}

/// What a program reads beside the route's own work.
private func touchRequestFields(_ request: CGIRequest) {
    _ = request.mediaType
    _ = try? request.userKey()
    for name in ["If-Match", "If-None-Match", "X-Sync-Version", "X-Device-Id", "Content-Type"] {
        _ = request.environment[CGIRequest.metaVariable(forHeader: name)]
    }
    if let query = QueryString(request.query) {
        require(query.names.count == query.values.count, "query names and values differ in number")
        if let text = query["anchor"], let anchor = Anchor(text) {
            require(Anchor(anchor.description) == anchor, "anchor \(show(text)) does not round-trip")
        }
    }
}

/// Runs `body` with a pipe holding `bytes` (then end of file) as stdin.
private func withStdin<T>(_ bytes: [UInt8], _ body: (FileDescriptor) -> T) -> T {
    var fds: [Int32] = [-1, -1]
    require(pipe(&fds) == 0, "pipe: errno \(errno)")
    // A pipe holds 64 KiB; the fuzzer's inputs are far smaller.
    let chunk = Array(bytes.prefix(60_000))
    if !chunk.isEmpty {
        let written = chunk.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        require(written == chunk.count, "short write to the stdin pipe")
    }
    close(fds[1])
    var savedStderr: Int32 = -1
    if quiet {
        // The library's diagnostics would drown libFuzzer's own lines.
        savedStderr = dup(2)
        let null = open("/dev/null", O_WRONLY)
        dup2(null, 2)
        close(null)
    }
    let result = body(FileDescriptor(rawValue: fds[0]))
    if quiet {
        dup2(savedStderr, 2)
        close(savedStderr)
    }
    close(fds[0])
    return result
}

private func check(_ response: CGIResponse, request index: Int, signingChanged: Bool, input: [UInt8]) {
    var context: String { "request \(index) of \(show(input)) answered \(response.status) \(show(response.body))" }
    if !quiet {
        let line = Array("request \(index): \(response.status) \(response.headers.map { "\($0.name): \($0.value)" }) \(show(response.body))\n".utf8)
        line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }
    require(!response.status.reason.hasPrefix("Status "), "unknown status: \(context)")
    for header in response.headers {
        for text in [header.name, header.value] {
            require(!text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }, "header \(show(text)): \(context)")
        }
    }
    let serialized = response.serialized
    require(serialized.starts(with: Array("Status: \(response.status) ".utf8)), "serialized as \(show(serialized))")
    if response.status == 204 || response.status == 304 {
        require(response.body.isEmpty, "a body on a \(response.status): \(context)")
        return
    }
    guard let body = try? JSONParser.parse(response.body, maxDepth: JSONParser.storedDocumentMaxDepth) else {
        require(false, "the body is not JSON: \(context)")
        return
    }
    guard response.status.code >= 400 else { return }
    guard let message = body.objectValue?["error"]?.stringValue else {
        require(false, "an error without an \"error\" string: \(context)")
        return
    }
    switch response.status {
    case 500:
        let expected = message.hasPrefix("server misconfigured")
            || (signingChanged && message == "stored data failed its integrity check")
        require(expected, "a 500: \(context)")
    case 507:
        require(message.hasPrefix("inbox full"), "a 507: \(context)")
    case 503:
        require(false, "a 503: \(context)")
    default:
        break
    }
}

/// A write that succeeded answered what the store now holds: the settings
/// file is the answer in Python's layout with the answer's ETag, a message
/// file the answer's very bytes.
private func checkStored(_ response: CGIResponse, _ environment: [String: String], request index: Int, input: [UInt8]) {
    guard let method = environment["REQUEST_METHOD"], ["PUT", "PATCH", "POST"].contains(method),
        response.status == 200 || response.status == 201
    else { return }
    var context: String { "request \(index) of \(show(input)) answered \(response.status) \(show(response.body))" }
    let request = CGIRequest(environment: Environment(environment), body: [])
    guard let key = try? request.userKey() else {
        require(false, "a write without a valid key succeeded: \(context)")
        return
    }
    if request.path == Endpoint.settings.path {
        let file = try? Sys.readFile("\(dataRoot)/\(SettingsStore.storeName.name)/\(key.rawValue).json")
        guard let file, let stored = try? JSONParser.parse(file, maxDepth: JSONParser.storedDocumentMaxDepth) else {
            require(false, "no readable settings file after \(context)")
            return
        }
        require(JSONPrinter.pretty(stored) == file, "the settings file is not in Python's layout after \(context)")
        require(JSONPrinter.compact(stored) == response.body, "the settings file \(show(file)) differs from \(context)")
        require(response.header("ETag") == EntityTag(of: file).text, "the ETag is not the file's after \(context)")
        return
    }
    let id = response.status == 201
        ? String(response.header("Location")?.dropFirst(Endpoint.message.path.count) ?? "")
        : String(request.path.dropFirst(Endpoint.message.path.count))
    let file = try? Sys.readFile("\(dataRoot)/\(InboxStore.storeName.name)/\(key.rawValue)/messages/\(id).json")
    require(file == .some(response.body), "the message file \(show(file ?? [])) differs from \(context)")
}

/// Nothing beside `data` in the sandbox, and inside it only what the
/// stores make: `.locks/`, `user_settings/`, `inbox/<key>/…`.
private func checkSandbox(_ input: [UInt8]) {
    let outside = entries(sandbox).filter { $0 != "data" }
    require(outside.isEmpty, "written outside the data directory: \(outside) by \(show(input))")
    for name in entries(dataRoot) {
        require([".locks", "user_settings", "inbox"].contains(name), "unexpected \(show(name)) in the data directory by \(show(input))")
    }
    for key in entries(dataRoot + "/inbox") {
        require(UserKey(key) != nil, "inbox directory \(show(key)) by \(show(input))")
    }
}

private func entries(_ directory: String) -> [String] {
    (try? Sys.names(in: directory)) ?? []
}

/// `rm -rf path`.
private func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        for name in entries(path) { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
