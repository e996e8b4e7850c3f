import Foundation
import MockCloudClient
import MockCloudWire

/// What `mockcloud-sync` was asked to do, from its arguments.
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

    var command: Command
    var url: String
    var caFile: String
    var caSHA256: String?
    var token: String?
    var userKey: UserKey
    var deviceID: DeviceID?
    var json = false
    /// push: delete on the server what was pushed from files now gone.
    var deleteMissing = false
    /// pull: skip this device's own writes in incremental reads.
    var excludeOwn = false
    /// pull: keep the folder current, waiting for each change, until interrupted.
    var follow = false
    var ifMatch: String?

    static let usage = """
        usage: mockcloud-sync push DIR        [--delete]
               mockcloud-sync pull DIR        [--exclude-own] [--follow]
               mockcloud-sync settings get
               mockcloud-sync settings put FILE   [--if-match ETAG]
               mockcloud-sync settings patch FILE [--if-match ETAG]
               mockcloud-sync settings merge FILE --edited-at TIME
        options: --url https://BOX:8443 --ca CA.crt [--ca-sha256 HEX] --user-key KEY
                 [--device-id ID] [--token TOKEN] [--json]
        merge: FILE holds the members edited at TIME (2026-05-18T10:01:00Z), each merged
               by its own time: a member edited later on the box keeps the box's value
        exit: 0 done; 1 not everything was stored (409, 412, a refused item, a member
              the box kept on a merge);
              2 usage; 3 a local file; 4 the server's certificate was not trusted;
              5 the server was unavailable after every retry; 6 the server refused
              the request; 7 an answer that was not understood
        """

    /// Parses `arguments`; throws the sentence to print before the usage.
    init(_ arguments: [String]) throws(UsageError) {
        var positional: [String] = []
        var values: [String: String] = [:]
        var flags: Set<String> = []
        let valued: Set<String> = [
            "--url", "--ca", "--ca-sha256", "--token", "--user-key", "--device-id", "--if-match", "--edited-at",
        ]
        let boolean: Set<String> = ["--json", "--delete", "--exclude-own", "--follow"]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { throw UsageError("") }
            let (name, inline) = argument.split(separator: "=", maxSplits: 1).map(String.init).pair
            if valued.contains(name) {
                if let inline {
                    values[name] = inline
                } else {
                    guard index < arguments.count else { throw UsageError("\(name) needs a value") }
                    values[name] = arguments[index]
                    index += 1
                }
            } else if boolean.contains(argument) {
                flags.insert(argument)
            } else if argument.hasPrefix("--") {
                throw UsageError("unknown option \(argument)")
            } else {
                positional.append(argument)
            }
        }
        switch (positional.first, positional.count) {
        case ("push", 2): command = .push(directory: positional[1])
        case ("pull", 2): command = .pull(directory: positional[1])
        case ("settings", 2) where positional[1] == "get": command = .settingsGet
        case ("settings", 3) where positional[1] == "put": command = .settingsPut(file: positional[2])
        case ("settings", 3) where positional[1] == "patch": command = .settingsPatch(file: positional[2])
        case ("settings", 3) where positional[1] == "merge":
            guard let text = values["--edited-at"] else {
                throw UsageError("settings merge needs --edited-at TIME: when the members in the file were edited")
            }
            guard let micros = Timestamp.parse(text) else {
                throw UsageError("--edited-at \(text) is not a time stamp such as 2026-05-18T10:01:00Z or 20260518T100100Z")
            }
            guard values["--if-match"] == nil else {
                throw UsageError("--if-match does not apply to settings merge: each member is merged by its own time")
            }
            command = .settingsMerge(file: positional[2], editedAt: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
        default: throw UsageError(positional.isEmpty ? "no command" : "unknown command: \(positional.joined(separator: " "))")
        }
        guard let url = values["--url"], url.hasPrefix("https://") else {
            throw UsageError("--url https://BOX:PORT is required (HTTPS only)")
        }
        guard let ca = values["--ca"] else {
            throw UsageError("--ca FILE is required: the box's CA certificate (mockcloud-admin tls show)")
        }
        guard let keyText = values["--user-key"], let key = UserKey(keyText) else {
            throw UsageError("--user-key is required, ^[A-Za-z0-9_-]{1,128}$")
        }
        self.url = url
        caFile = ca
        caSHA256 = values["--ca-sha256"]
        token = values["--token"]
        userKey = key
        if let device = values["--device-id"] {
            guard let id = DeviceID(device) else { throw UsageError("--device-id must match ^[A-Za-z0-9_-]{1,128}$") }
            deviceID = id
        }
        json = flags.contains("--json")
        deleteMissing = flags.contains("--delete")
        excludeOwn = flags.contains("--exclude-own")
        follow = flags.contains("--follow")
        if follow {
            guard case .pull = command else { throw UsageError("--follow is for pull") }
        }
        ifMatch = values["--if-match"]
        if values["--edited-at"] != nil {
            guard case .settingsMerge = command else { throw UsageError("--edited-at applies to settings merge only") }
        }
    }
}

/// A command line that cannot be run: the sentence, then the usage (exit 2).
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension Array where Element == String {
    /// The first element and the second, if any.
    fileprivate var pair: (String, String?) { (self[0], count > 1 ? self[1] : nil) }
}
