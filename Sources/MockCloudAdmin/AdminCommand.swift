import MockCloudCommandLine
import MockCloudConfig
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// `mockcloud-admin`: checks and signs a data directory, makes bearer
/// tokens, and hands the box's chores (`tls`, `doctor`, `backup`,
/// `restore`) to its scripts (AdminScripts). Keys come from
/// `MOCKCLOUD_HMAC_KEYS` (or `--keys FILE`), as for the programs.
package struct AdminCommand {
    /// What a command line asks for.
    package enum Action: Sendable {
        case verify, sign, rotate, token, tlsEnsure, tlsRenew, tlsShow, doctor, backup, restore, settings
    }

    private static let keyFile = Option.value("--keys", "FILE", "verify, sign, rotate: the HMAC key file (else MOCKCLOUD_HMAC_KEYS)")
    private static let require = Option.flag("--require", "verify: unsigned documents are bad (or MOCKCLOUD_HMAC_REQUIRE=1)")
    private static let tlsDirectory = Option.value("--dir", "DIR", "tls: the CA's folder (default /etc/mockcloud/tls)")

    /// The command line, described once: parsing, usage and errors.
    package static let tool = CommandLineTool<Action>(
        name: "mockcloud-admin",
        commands: [
            .init("verify", .verify, arguments: [Argument("DATA_DIR")], options: [keyFile, require],
                  summary: "check every stored document's MAC; exit 1 and name each bad file"),
            .init("sign", .sign, arguments: [Argument("DATA_DIR")], options: [keyFile, require],
                  summary: "sign unsigned (legacy) documents with the first key"),
            .init("rotate", .rotate, arguments: [Argument("DATA_DIR")], options: [keyFile, require],
                  summary: "re-sign every valid document with the first key (after adding a new first key)"),
            .init("token", .token, arguments: [Argument("TOKENS_FILE"), Argument("LABEL", .optional)],
                  options: [.value("--keys", "KEY,KEY...", "token: the only X-User-Keys it may use (else every key)")],
                  summary: "make a bearer token: print it once, append only its SHA-256 to TOKENS_FILE (0600);\n"
                      + "with --keys it may use only those X-User-Keys, without it every key"),
            .init("tls ensure", .tlsEnsure, arguments: [Argument("NAME", .many)], options: [tlsDirectory],
                  summary: "make what is missing of the local CA and the server certificate it signs;\n"
                      + "a new certificate when the names changed or it ends within 30 days"),
            .init("tls renew", .tlsRenew, arguments: [Argument("NAME", .many)], options: [tlsDirectory],
                  summary: "a new server certificate now"),
            .init("tls show", .tlsShow, arguments: [Argument("OUT.crt", .optional)], options: [tlsDirectory],
                  summary: "where the CA is; writes the CA certificate for the phone (./mockcloud-ca.crt)\n"
                      + "and says how to trust it", isDefault: true),
            .init("doctor", .doctor,
                  options: [.value("--url", "https://HOST:PORT", "doctor: also a live GET through nginx there")],
                  summary: "check the installation: one line per problem with its fix; exit 1 on any"),
            .init("backup", .backup, arguments: [Argument("DATA_DIR"), Argument("FILE.tar")],
                  summary: "a consistent snapshot while serving"),
            .init("restore", .restore, arguments: [Argument("FILE.tar"), Argument("DATA_DIR")],
                  summary: "a backup into an empty data directory (every anchor then gets 410)"),
            .init("settings", .settings, summary: "every setting the service reads: name, default, who reads it, what it does"),
        ],
        notes: "-h or --help after tls, doctor, backup or restore: that command's own help.")

    package static var usage: String { tool.usage }

    /// Lines for stdout and stderr, and the exit status; or the script to
    /// replace this process with (`script`).
    package struct Result: Equatable {
        package var output: [String] = []
        package var errors: [String] = []
        package var status: Int32 = 0
        /// `tls`, `doctor`, `backup`, `restore`: the script and its arguments.
        package var script: ScriptRun?
    }

    /// A script to run in this process's place (AdminScripts.exec).
    package struct ScriptRun: Equatable {
        package var name: String
        package var arguments: [String]

        package init(name: String, arguments: [String]) {
            self.name = name
            self.arguments = arguments
        }
    }

    /// Runs the command line `arguments` (without the program name).
    package static func run(_ arguments: [String], environment: Environment) -> Result {
        let parsed: ParsedCommand<Action>
        do {
            switch try tool.parse(arguments) {
            case .help(let command):
                if let command, let name = scriptName(command.action) {
                    return Result(script: ScriptRun(name: name, arguments: ["--help"]))
                }
                return Result(output: lines(usage))
            case .run(let command):
                parsed = command
            }
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"] + lines(usage), status: 2)
        }
        switch parsed.action {
        case .settings:
            return Result(output: Setting.all.map { "\($0.name)\t\($0.defaultValue)\t\($0.reader.rawValue)\t\($0.meaning)" })
        case .token:
            return token(file: parsed.argument("TOKENS_FILE") ?? "", label: parsed.argument("LABEL") ?? "", keys: parsed.value("--keys"))
        case .verify, .sign, .rotate:
            return data(parsed, environment: environment)
        case .tlsEnsure, .tlsRenew, .tlsShow:
            let directory = parsed.value("--dir").map { ["--dir", $0] } ?? []
            let rest = parsed.all("NAME") + (parsed.argument("OUT.crt").map { [$0] } ?? [])
            return Result(script: ScriptRun(name: "tls.sh", arguments: directory + [parsed.command.words[1]] + rest))
        case .doctor:
            return Result(script: ScriptRun(name: "doctor.sh", arguments: parsed.value("--url").map { ["--url", $0] } ?? []))
        case .backup:
            return Result(script: ScriptRun(
                name: "backup.sh", arguments: ["backup", parsed.argument("DATA_DIR") ?? "", parsed.argument("FILE.tar") ?? ""]))
        case .restore:
            return Result(script: ScriptRun(
                name: "backup.sh", arguments: ["restore", parsed.argument("FILE.tar") ?? "", parsed.argument("DATA_DIR") ?? ""]))
        }
    }

    /// The script that does `action` (AdminScripts), nil for what this
    /// program does itself.
    private static func scriptName(_ action: Action) -> String? {
        switch action {
        case .tlsEnsure, .tlsRenew, .tlsShow: return "tls.sh"
        case .doctor: return "doctor.sh"
        case .backup, .restore: return "backup.sh"
        case .verify, .sign, .rotate, .token, .settings: return nil
        }
    }

    /// verify, sign, rotate: the data directory against the key file.
    private static func data(_ parsed: ParsedCommand<Action>, environment: Environment) -> Result {
        var result = Result()
        let root = parsed.argument("DATA_DIR") ?? ""
        let require: Bool
        do {
            require = try parsed.isSet("--require") || ServiceConfig.requiresSigned(environment)
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"], status: 2)
        }
        guard let keyFile = parsed.value("--keys") ?? ServiceConfig.signingKeyFile(environment), !keyFile.isEmpty else {
            return Result(errors: ["mockcloud-admin: no keys: set MOCKCLOUD_HMAC_KEYS or pass --keys FILE"], status: 2)
        }
        if parsed.action != .verify, let problem = becomeOwner(of: root) {
            return Result(errors: [problem], status: 2)
        }
        do {
            let integrity = Integrity(keys: try SigningKeys.load(path: keyFile), requireSigned: require)
            let documents = try DataDirectory.documents(root: root, integrity: integrity)
            if parsed.action == .verify {
                verify(documents, integrity, into: &result)
            } else {
                sign(documents, integrity, root: root, rotate: parsed.action == .rotate, into: &result)
            }
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"], status: 2)
        }
        return result
    }

    private static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// As root, `sign` and `rotate` work as the data directory's owner (the
    /// user the programs serve as): the MAC sidecars they write are then that
    /// user's, where root's 0600 files would fail every request that reads
    /// them. The key file must be readable by that user too, as it is for the
    /// programs. Returns the line to print when the switch fails.
    private static func becomeOwner(of root: String) -> String? {
        guard Sys.isRoot, let owner = try? Sys.owner(of: root), owner.user != 0 else { return nil }
        do {
            try Sys.become(user: owner.user, group: owner.group)
        } catch let error as SystemError {
            return "mockcloud-admin: cannot act as \(root)'s owner (uid \(owner.user)): \(error.errno)"
        } catch {
            return "mockcloud-admin: cannot act as \(root)'s owner (uid \(owner.user)): \(error)"
        }
        return nil
    }

    /// Appends a new token's hash to the token file (created 0600) and
    /// prints the token, the only time it is ever shown. `keys`: the
    /// comma-separated user keys the token may use; `nil`: every key.
    private static func token(file: String, label: String, keys: String?) -> Result {
        guard label.isEmpty || Identifier.matches(label, maxLength: 64, extra: "._-") else {
            return Result(errors: ["mockcloud-admin: a label is 1-64 letters, digits, '.', '_' or '-'"], status: 2)
        }
        let userKeys = keys.map { $0.split(separator: ",", omittingEmptySubsequences: false).map { UserKey(String($0)) } }
        if let userKeys, userKeys.isEmpty || userKeys.contains(where: { $0 == nil }) {
            return Result(
                errors: ["mockcloud-admin: --keys takes user keys separated by commas, e.g. --keys u1,u2 (each 1-128 of A-Z a-z 0-9 _ -)"],
                status: 2)
        }
        do {
            if let existing = try Sys.readFile(file) {
                // Refuse to add to a file the programs would refuse to read.
                _ = try AccessTokens.load(path: file)
                if !existing.isEmpty, existing.last != 0x0A { try append("\n", to: file) }
            }
            let (token, line) = AccessTokens.newToken(label: label, keys: userKeys?.compactMap { $0 })
            try append(line + "\n", to: file)
            return Result(
                output: [token],
                errors: ["mockcloud-admin: token added to \(file); it is shown only now. Send it as: Authorization: Bearer <token>"])
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"], status: 2)
        }
    }

    private static func append(_ text: String, to file: String) throws {
        let fd = try Sys.open(file, .writeOnly | .append | .create, mode: 0o600)
        try Sys.closing(fd) { fd in
            try Sys.writeAll(fd, Array(text.utf8), path: file)
            try Sys.fsync(fd, path: file)
        }
    }


    private static func verify(_ documents: [StoredDocument], _ integrity: Integrity, into result: inout Result) {
        var checked = 0, signed = 0, unsigned = 0, bad = 0
        for document in documents {
            checked += 1
            do {
                guard let (_, verdict) = try document.folder.inspect(document.name, at: document.place) else { continue }
                switch verdict {
                case .signed: signed += 1
                case .unsigned:
                    unsigned += 1
                    if integrity.requireSigned {
                        bad += 1
                        result.errors.append("BAD \(document.path): unsigned")
                    }
                case .invalid(let reason):
                    bad += 1
                    result.errors.append("BAD \(document.path): \(reason)")
                }
            } catch {
                bad += 1
                result.errors.append("BAD \(document.path): \(error)")
            }
        }
        result.output.append("checked \(checked) documents: \(signed) signed, \(unsigned) unsigned, \(bad) bad")
        if bad > 0 { result.status = 1 }
    }

    private static func sign(_ documents: [StoredDocument], _ integrity: Integrity, root: String, rotate: Bool, into result: inout Result) {
        guard let current = integrity.keys?.current else { return }
        var changed = 0, kept = 0, bad = 0
        for document in documents {
            do {
                try DataDirectory.withWriterLock(root: root, document) {
                    guard let (bytes, verdict) = try document.folder.inspect(document.name, at: document.place) else { return }
                    switch verdict {
                    case .invalid(let reason):
                        bad += 1
                        result.errors.append("BAD \(document.path): \(reason); not signed")
                    case .signed(let keyID) where !rotate || keyID == current.id:
                        kept += 1
                    case .signed, .unsigned:
                        guard let sidecar = integrity.sidecar(for: bytes, at: document.place) else { return }
                        try document.folder.writeSidecar(sidecar, of: document.name)
                        changed += 1
                    }
                }
            } catch {
                bad += 1
                result.errors.append("BAD \(document.path): \(error)")
            }
        }
        let verb = rotate ? "re-signed" : "signed"
        result.output.append("\(verb) \(changed) documents with key \(current.id); \(kept) already were; \(bad) bad")
        if bad > 0 { result.status = 1 }
    }
}
