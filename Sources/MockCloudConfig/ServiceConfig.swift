import MockCloudJSON
import MockCloudStore
import MockCloudSystem

/// Settings that nginx passes to every program as `fastcgi_param`s: the one
/// place where the environment is read for configuration (the admin tool
/// reads its defaults here too). A missing data directory, a bad key or
/// token file or a bad inbox limit is a 500 that names the problem, for every
/// request, until it is fixed.
package struct ServiceConfig: Sendable {
    /// `MOCKCLOUD_DATA`: the data directory.
    package let dataRoot: String
    /// `MOCKCLOUD_HMAC_KEYS` and `MOCKCLOUD_HMAC_REQUIRE`: signing of stored data.
    package let integrity: Integrity
    /// `MOCKCLOUD_TOKENS`: bearer tokens every request must carry; `nil` when off.
    package let access: AccessTokens?
    /// `MOCKCLOUD_MIN_FREE_MB`: writes other than deletions are refused (507)
    /// below this much free space on the data directory's file system.
    package let minimumFreeBytes: Int64
    /// `MOCKCLOUD_WAITS_PER_ADDRESS`: the waits one client address may hold
    /// at once; `nil` with `MOCKCLOUD_LIMITS=off` (every client comes through
    /// one address, and the box's total is the only bound).
    package let waitsPerAddress: Int?
    /// The environment the settings came from, for the route-specific ones.
    private let environment: Environment

    /// Reads the settings every route needs.
    package init(environment: Environment) throws {
        dataRoot = try Self.dataRoot(environment)
        integrity = try Self.integrity(environment)
        access = try Self.accessTokens(environment)
        minimumFreeBytes = try Self.minimumFreeBytes(environment)
        waitsPerAddress = try Self.waitsPerAddress(environment)
        self.environment = environment
    }

    /// The inbox's limits (`MOCKCLOUD_INBOX_*`); read by the inbox program only.
    package func inboxSettings() throws -> InboxSettings {
        var settings = try Self.inboxSettings(environment)
        settings.minimumFreeBytes = minimumFreeBytes
        return settings
    }

    // MARK: - Each setting

    /// `MOCKCLOUD_DATA` is required: a program that guessed would write the
    /// user's data where nobody looks for it.
    package static func dataRoot(_ environment: Environment) throws -> String {
        guard let root = environment["MOCKCLOUD_DATA"], !root.isEmpty else {
            throw ConfigError("MOCKCLOUD_DATA is not set; add `fastcgi_param MOCKCLOUD_DATA /path/to/data;` to nginx")
        }
        return root
    }

    /// `MOCKCLOUD_HMAC_KEYS`: the key file's path; `nil` when signing is off.
    package static func signingKeyFile(_ environment: Environment) -> String? {
        guard let path = environment["MOCKCLOUD_HMAC_KEYS"], !path.isEmpty else { return nil }
        return path
    }

    /// `MOCKCLOUD_HMAC_REQUIRE=1`: unsigned documents are refused; unset or
    /// empty: they are served. Any other value (`true`, `yes`, `0`) is
    /// refused rather than read as either: a guess could leave signatures
    /// optional on a box whose operator meant to require them.
    package static func requiresSigned(_ environment: Environment) throws -> Bool {
        guard let text = environment["MOCKCLOUD_HMAC_REQUIRE"], !text.isEmpty else { return false }
        guard text == "1" else {
            throw ConfigError("MOCKCLOUD_HMAC_REQUIRE=\(text) is not accepted: set it to 1 to refuse unsigned documents, or leave it unset")
        }
        return true
    }

    /// Signing from `MOCKCLOUD_HMAC_KEYS` and `MOCKCLOUD_HMAC_REQUIRE`.
    package static func integrity(_ environment: Environment) throws -> Integrity {
        let require = try requiresSigned(environment)
        guard let path = signingKeyFile(environment) else {
            if require { throw ConfigError("MOCKCLOUD_HMAC_REQUIRE=1 is set but MOCKCLOUD_HMAC_KEYS is not") }
            return .off
        }
        return Integrity(keys: try SigningKeys.load(path: path), requireSigned: require)
    }

    /// `nil` when `MOCKCLOUD_TOKENS` is not set (access is open, as in the
    /// Python service); a missing, malformed or group/other-readable file
    /// throws.
    package static func accessTokens(_ environment: Environment) throws -> AccessTokens? {
        guard let path = environment["MOCKCLOUD_TOKENS"], !path.isEmpty else { return nil }
        return try AccessTokens.load(path: path)
    }

    /// `MOCKCLOUD_MIN_FREE_MB` in bytes (0: no floor); 64 MiB when unset.
    package static func minimumFreeBytes(_ environment: Environment) throws -> Int64 {
        guard let text = environment["MOCKCLOUD_MIN_FREE_MB"], !text.isEmpty else { return FreeSpaceError.defaultFloor }
        guard text.utf8.count <= 7, text.utf8.allSatisfy(ASCII.isDigit), let mebibytes = Int64(text) else {
            throw ConfigError("MOCKCLOUD_MIN_FREE_MB=\(text) is not a whole number of MiB from 0 to 9999999")
        }
        return mebibytes << 20
    }

    /// The waits one address may hold when `MOCKCLOUD_WAITS_PER_ADDRESS` is
    /// unset: a phone follows its feed and its settings (2), and the same two
    /// again after a connection that broke without the box hearing of it,
    /// whose waits hold their places until they run out (README, "Waiting
    /// for a change").
    package static let defaultWaitsPerAddress = 4

    /// `MOCKCLOUD_WAITS_PER_ADDRESS` (1 to `Capacity.waitingAtOnce`; 4 when unset),
    /// or `nil` when `MOCKCLOUD_LIMITS` is `off`. `MOCKCLOUD_LIMITS` reaches
    /// the programs too, so that a box behind a proxy turns both per-address
    /// limits off with one setting; any value but `off` (or `on`, or empty)
    /// is refused, as the launcher refuses it.
    package static func waitsPerAddress(_ environment: Environment) throws -> Int? {
        let limits = environment["MOCKCLOUD_LIMITS"] ?? ""
        guard limits.isEmpty || limits == "on" || limits == "off" else {
            throw ConfigError("MOCKCLOUD_LIMITS=\(limits) is not accepted: set it to off (no per-address limits, "
                + "for a box every client reaches through one address) or leave it unset")
        }
        guard let text = environment["MOCKCLOUD_WAITS_PER_ADDRESS"], !text.isEmpty else {
            return limits == "off" ? nil : defaultWaitsPerAddress
        }
        guard text.utf8.count <= 3, text.utf8.allSatisfy(ASCII.isDigit), let places = Int(text),
            (1...Capacity.waitingAtOnce).contains(places)
        else {
            throw ConfigError("MOCKCLOUD_WAITS_PER_ADDRESS=\(text) is not a whole number from 1 to \(Capacity.waitingAtOnce) "
                + "(the box's places for waiting requests): the waits one client address may hold at once")
        }
        return limits == "off" ? nil : places
    }

    /// `MOCKCLOUD_INBOX_MAX_MESSAGES`, `MOCKCLOUD_INBOX_TOMBSTONE_HORIZON`
    /// (seconds) and `MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS`; defaults when unset.
    package static func inboxSettings(_ environment: Environment) throws -> InboxSettings {
        func value(_ name: String, _ range: ClosedRange<Int64>) throws -> Int64? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let number = Int64(text), range.contains(number) else {
                throw ConfigError("\(name)=\(text) is not an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        var settings = InboxSettings()
        if let max = try value("MOCKCLOUD_INBOX_MAX_MESSAGES", 1...100_000_000) { settings.maxMessages = Int(max) }
        if let horizon = try value("MOCKCLOUD_INBOX_TOMBSTONE_HORIZON", 0...100 * 365 * 86400) {
            settings.tombstoneHorizonSeconds = horizon
        }
        if let minimum = try value("MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS", 1...100_000_000) {
            settings.compactionMinimumRecords = Int(minimum)
        }
        return settings
    }

    /// `MOCKCLOUD_ADMIN_SCRIPTS`: where `mockcloud-admin` finds its shell
    /// subcommands; `nil`: beside the executable.
    package static func adminScripts(_ environment: Environment) -> String? {
        guard let folder = environment["MOCKCLOUD_ADMIN_SCRIPTS"], !folder.isEmpty else { return nil }
        return folder
    }
}

/// A setting that cannot be used: every request fails (closed) until it is
/// fixed. Clients learn only that the server is misconfigured; `detail`, for
/// the server log and the admin tool, says what and how to fix it.
package struct ConfigError: Error, Equatable, CustomStringConvertible {
    package let detail: String

    package init(_ detail: String) {
        self.detail = detail
    }

    package var description: String { detail }
}
