import Foundation
import MockCloudCommandLine
import MockCloudWire

/// What `mockcloud-sync` was asked to do, from its arguments and the
/// environment (`MOCKCLOUD_SYNC_TOKEN`).
struct SyncOptions {
    enum Command: Equatable {
        case push(directory: String)
        case pull(directory: String)
        case settingsGet
        case settingsPut(file: String)
        case settingsPatch(file: String)
        /// A per-field merge of the members in `file`, edited at `editedAt`.
        case settingsMerge(file: String, editedAt: Date)
    }

    /// Where the bearer token comes from (none: a box without tokens).
    enum TokenSource: Equatable {
        case file(String)
        case environment(String)
    }

    var command: Command
    var url: URL
    var caFile: String
    var caSHA256: String?
    var token: TokenSource?
    var userKey: UserKey
    var deviceID: DeviceID?
    var json: Bool
    /// push: delete on the server what was pushed from files now gone.
    var deleteMissing: Bool
    /// pull: skip this device's own writes in incremental reads.
    var excludeOwn: Bool
    /// pull: keep the folder current, waiting for each change, until interrupted.
    var follow: Bool
    /// push: keep sending each file as it is written, until interrupted.
    var watch: Bool
    var ifMatch: String?

    /// The variable that may hold the bearer token.
    static let tokenVariable = "MOCKCLOUD_SYNC_TOKEN"

    enum Action: Sendable { case push, pull, settingsGet, settingsPut, settingsPatch, settingsMerge }

    /// The command line, described once: parsing, usage and errors.
    static let tool = CommandLineTool<Action>(
        name: "mockcloud-sync",
        commands: [
            .init("push", .push, arguments: [Argument("DIR")],
                  options: [.flag("--delete", "push: delete on the server what was pushed from files now gone"),
                            .flag("--watch", "push: then each file as it is written (closed or renamed in), until interrupted")],
                  summary: "every DIR/<id>.json becomes message <id> (version: its syncVersion)"),
            .init("pull", .pull, arguments: [Argument("DIR")],
                  options: [.flag("--exclude-own", "pull: skip this device's own writes in incremental reads"),
                            .flag("--follow", "pull: keep DIR current, waiting for each change, until interrupted")],
                  summary: "the feed into DIR/<id>.json, deletions applied"),
            .init("settings get", .settingsGet, summary: "print the stored settings (and their ETag on stderr)"),
            .init("settings put", .settingsPut, arguments: [Argument("FILE")], options: [ifMatchOption],
                  summary: "store the JSON object in FILE"),
            .init("settings patch", .settingsPatch, arguments: [Argument("FILE")], options: [ifMatchOption],
                  summary: "merge-patch the stored settings with FILE"),
            .init("settings merge", .settingsMerge, arguments: [Argument("FILE")],
                  options: [.value("--edited-at", "TIME", required: true,
                                   "when the members in FILE were edited (2026-05-18T10:01:00Z)")],
                  summary: "merge each member in FILE by its own edit time: one edited later on the box keeps the box's value"),
        ],
        commonOptions: [
            .value("--url", "https://BOX:8443", required: true, "the box (HTTPS only)"),
            .value("--ca", "CA.crt", required: true, "the box's CA certificate (mockcloud-admin tls show), the only one trusted"),
            .value("--ca-sha256", "HEX", "the CA certificate's SHA-256, as mockcloud-admin tls show prints it"),
            .value("--user-key", "KEY", required: true, "the X-User-Key, ^[A-Za-z0-9_-]{1,128}$"),
            .value("--device-id", "ID", "this device's X-Device-Id, ^[A-Za-z0-9_-]{1,128}$"),
            .value("--token-file", "FILE", "the bearer token, in a file only its owner can read (chmod 600)"),
            .flag("--json", "print one JSON object for scripts"),
            .refused("--token", "--token would show the token in ps and in shell history: put it in a file only you can read "
                + "and pass --token-file FILE, or set \(tokenVariable)"),
        ],
        notes: """
            token: --token-file FILE, else the environment's \(tokenVariable); neither: no token.
            exit: 0 done; 1 not everything was stored (409, 412, a refused item, a member
                  the box kept on a merge);
                  2 usage; 3 a local file; 4 the server's certificate was not trusted;
                  5 the server was unavailable after every retry; 6 the server refused
                  the request; 7 an answer that was not understood; 8 another push is
                  running on the folder; 130 interrupted
            push --watch and pull --follow run until Ctrl-C or SIGTERM, which end them with 0.
            """)

    private static let ifMatchOption = Option.value("--if-match", "ETAG", "write only if the stored settings have this ETag")

    static var usage: String { tool.usage }

    /// The options of a parsed command line; throws the sentence to print
    /// before the usage when a value has the wrong shape. `environment`
    /// looks a variable up.
    init(_ parsed: ParsedCommand<Action>, environment: (String) -> String?) throws {
        switch parsed.action {
        case .push: command = .push(directory: parsed.argument("DIR") ?? "")
        case .pull: command = .pull(directory: parsed.argument("DIR") ?? "")
        case .settingsGet: command = .settingsGet
        case .settingsPut: command = .settingsPut(file: parsed.argument("FILE") ?? "")
        case .settingsPatch: command = .settingsPatch(file: parsed.argument("FILE") ?? "")
        case .settingsMerge:
            let text = parsed.value("--edited-at") ?? ""
            guard let micros = Timestamp.parse(text) else {
                throw UsageError("--edited-at \(text) is not a time stamp such as 2026-05-18T10:01:00Z or 20260518T100100Z")
            }
            command = .settingsMerge(
                file: parsed.argument("FILE") ?? "", editedAt: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
        }
        guard let text = parsed.value("--url"), text.hasPrefix("https://"), text.utf8.count > 8, let url = URL(string: text) else {
            throw UsageError("--url must be https://BOX:PORT (HTTPS only)")
        }
        guard let key = parsed.value("--user-key").flatMap(UserKey.init) else {
            throw UsageError("--user-key must match ^[A-Za-z0-9_-]{1,128}$")
        }
        self.url = url
        caFile = parsed.value("--ca") ?? ""
        caSHA256 = parsed.value("--ca-sha256")
        userKey = key
        if let device = parsed.value("--device-id") {
            guard let id = DeviceID(device) else { throw UsageError("--device-id must match ^[A-Za-z0-9_-]{1,128}$") }
            deviceID = id
        }
        if let file = parsed.value("--token-file") {
            token = .file(file)
        } else if let value = environment(Self.tokenVariable) {
            guard let checked = Self.token(value) else {
                throw UsageError("\(Self.tokenVariable) must hold one token: printable characters, no spaces"
                    + (value.isEmpty ? " (it is set but empty: unset it for a box without tokens)" : ""))
            }
            token = .environment(checked)
        }
        json = parsed.isSet("--json")
        deleteMissing = parsed.isSet("--delete")
        excludeOwn = parsed.isSet("--exclude-own")
        follow = parsed.isSet("--follow")
        watch = parsed.isSet("--watch")
        ifMatch = parsed.value("--if-match")
    }

    /// `text` when it is one token as an `Authorization: Bearer` header may
    /// carry it (visible ASCII, no spaces), else nil.
    static func token<Text: Collection<UInt8>>(_ text: Text) -> String? {
        guard !text.isEmpty, text.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }

    static func token(_ text: String) -> String? { token(text.utf8) }
}
