import MockCloudConfig
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// `mockcloud-admin`: checks and signs a data directory.
///
///     mockcloud-admin verify DATA_DIR    exit 1 and a line per bad file
///     mockcloud-admin sign DATA_DIR      sign unsigned files with the first key
///     mockcloud-admin rotate DATA_DIR    re-sign every valid file with the first key
///     mockcloud-admin token TOKENS_FILE [LABEL] [--keys KEY,KEY...]   make a bearer token
///
/// Keys come from `MOCKCLOUD_HMAC_KEYS` (or `--keys FILE`), as for the programs.
package struct AdminCommand {
    package static let usage = """
        usage: mockcloud-admin verify|sign|rotate [--keys FILE] [--require] DATA_DIR
               mockcloud-admin token TOKENS_FILE [LABEL] [--keys KEY,KEY...]
               mockcloud-admin tls [--dir DIR] ensure|renew [NAME...] | tls [--dir DIR] show [OUT.crt]
               mockcloud-admin doctor [--url https://HOST:PORT]
               mockcloud-admin backup DATA_DIR FILE.tar | restore FILE.tar DATA_DIR
               mockcloud-admin settings
          verify   check every stored document's MAC; exit 1 and name each bad file
          sign     sign unsigned (legacy) documents with the first key
          rotate   re-sign every valid document with the first key (after adding a new first key)
          token    make a bearer token: print it once, append only its SHA-256 to TOKENS_FILE (0600);
                   with --keys it may use only those X-User-Keys, without it every key
          tls      the local CA (DIR: /etc/mockcloud/tls) and the server certificate it signs;
                   show writes the CA certificate for the phone and says how to trust it
          doctor   check the installation: one line per problem with its fix; exit 1 on any
          backup   a consistent snapshot while serving; restore: into an empty data directory
          settings every setting the service reads: name, default, who reads it, what it does
        Keys: --keys FILE or MOCKCLOUD_HMAC_KEYS. --require (or MOCKCLOUD_HMAC_REQUIRE=1):
        verify counts unsigned documents as bad.
        """

    /// The commands that work on a data directory.
    enum DataCommand: String {
        case verify, sign, rotate
    }

    /// Lines for stdout and stderr, and the exit status.
    package struct Result: Equatable {
        package var output: [String] = []
        package var errors: [String] = []
        package var status: Int32 = 0
    }

    /// Runs the command line `arguments` (without the program name).
    package static func run(_ arguments: [String], environment: Environment) -> Result {
        var result = Result()
        var rest = arguments
        var keyFile = ServiceConfig.signingKeyFile(environment)
        var require: Bool
        do {
            require = try ServiceConfig.requiresSigned(environment)
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"], status: 2)
        }
        // `--keys`: the key file for verify/sign/rotate, the user keys for token.
        var keysOption: String?
        var positional: [String] = []
        while !rest.isEmpty {
            let argument = rest.removeFirst()
            switch argument {
            case "--keys" where !rest.isEmpty:
                keysOption = rest.removeFirst()
                keyFile = keysOption
            case "--require": require = true
            case "-h", "--help":
                result.output = usage.split(separator: "\n").map(String.init)
                return result
            default: positional.append(argument)
            }
        }
        if positional == ["settings"] {
            result.output = Setting.all.map { "\($0.name)\t\($0.defaultValue)\t\($0.reader.rawValue)\t\($0.meaning)" }
            return result
        }
        if positional.first == "token", (2...3).contains(positional.count) {
            return token(file: positional[1], label: positional.count == 3 ? positional[2] : "", keys: keysOption)
        }
        guard positional.count == 2, let command = DataCommand(rawValue: positional[0]) else {
            return Result(errors: usage.split(separator: "\n").map(String.init), status: 2)
        }
        let root = positional[1]
        guard let keyFile, !keyFile.isEmpty else {
            return Result(errors: ["mockcloud-admin: no keys: set MOCKCLOUD_HMAC_KEYS or pass --keys FILE"], status: 2)
        }
        if command != .verify, let problem = becomeOwner(of: root) {
            return Result(errors: [problem], status: 2)
        }
        do {
            let integrity = Integrity(keys: try SigningKeys.load(path: keyFile), requireSigned: require)
            let documents = try DataDirectory.documents(root: root, integrity: integrity)
            switch command {
            case .verify: verify(documents, integrity, into: &result)
            case .sign: sign(documents, integrity, root: root, rotate: false, into: &result)
            case .rotate: sign(documents, integrity, root: root, rotate: true, into: &result)
            }
        } catch {
            return Result(errors: ["mockcloud-admin: \(error)"], status: 2)
        }
        return result
    }

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
                        try AtomicFile.write(sidecar, to: document.name + DocumentFolder.sidecarSuffix, in: document.folder.directory)
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
