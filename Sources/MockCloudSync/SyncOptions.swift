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
        options: --url https://BOX:8443 --ca CA.crt [--ca-sha256 HEX] --user-key KEY
                 [--device-id ID] [--token TOKEN] [--json]
        exit: 0 done; 1 not everything was stored (409, 412, a refused item);
              2 usage; 3 a local file; 4 the server's certificate was not trusted;
              5 the server was unavailable after every retry; 6 the server refused
              the request; 7 an answer that was not understood
        """

    /// Parses `arguments`; throws the sentence to print before the usage.
    init(_ arguments: [String]) throws(UsageError) {
        var positional: [String] = []
        var values: [String: String] = [:]
        var flags: Set<String> = []
        let valued: Set<String> = ["--url", "--ca", "--ca-sha256", "--token", "--user-key", "--device-id", "--if-match"]
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
