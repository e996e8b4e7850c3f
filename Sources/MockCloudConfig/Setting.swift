/// One setting of the service, read from the environment by the programs,
/// the admin tool or the launcher (`nginx/mockcloud-nginx.sh`). This list is
/// the one place they are named: `mockcloud-admin settings` prints it, and a
/// test checks the launcher, the test harness and the README's table
/// against it.
package struct Setting: Sendable, Equatable {
    /// Who reads it.
    package enum Reader: String, Sendable {
        /// Both CGI programs (as a `fastcgi_param`).
        case programs
        /// The inbox program alone.
        case inbox
        /// The launcher, for `make serve` and the test stacks.
        case launcher
        /// `mockcloud-admin`.
        case admin
    }

    package let name: String
    /// As the README's table shows it: `` `8443` ``, `unset`.
    package let defaultValue: String
    package let reader: Reader
    /// What it does, in a few words.
    package let meaning: String

    /// Every setting, in the README's order.
    package static let all: [Setting] = [
        Setting(name: "MOCKCLOUD_PORT", defaultValue: "`8443`", reader: .launcher, meaning: "port to listen on"),
        Setting(name: "MOCKCLOUD_HOST", defaultValue: "`127.0.0.1`", reader: .launcher, meaning: "address to listen on"),
        Setting(name: "MOCKCLOUD_DATA", defaultValue: "`./data`", reader: .programs, meaning: "the data directory"),
        Setting(name: "MOCKCLOUD_RUN", defaultValue: "`./run`", reader: .launcher,
                meaning: "certificate, generated nginx.conf, logs, pid files, fcgiwrap socket"),
        Setting(name: "MOCKCLOUD_CGI_BIN", defaultValue: "`./cgi-bin`", reader: .launcher,
                meaning: "the folder of the programs nginx runs"),
        Setting(name: "MOCKCLOUD_UPSTREAM", defaultValue: "unset", reader: .launcher,
                meaning: "every other path is proxied there"),
        Setting(name: "MOCKCLOUD_CERT", defaultValue: "unset", reader: .launcher,
                meaning: "a certificate to use instead of the local CA's"),
        Setting(name: "MOCKCLOUD_CERT_KEY", defaultValue: "unset", reader: .launcher, meaning: "its key"),
        Setting(name: "MOCKCLOUD_USER", defaultValue: "`mockcloud`", reader: .launcher,
                meaning: "as root: the user that serves"),
        Setting(name: "MOCKCLOUD_MODE", defaultValue: "`cgi`", reader: .launcher,
                meaning: "cgi: a program per request; fastcgi: pools of persistent workers"),
        Setting(name: "MOCKCLOUD_FASTCGI_WORKERS", defaultValue: "`\(Capacity.fastCGIWorkers)`", reader: .launcher,
                meaning: "FastCGI mode: the workers of each program's pool"),
        Setting(name: "MOCKCLOUD_FASTCGI_MAX_REQUESTS", defaultValue: "unset", reader: .launcher,
                meaning: "FastCGI mode: requests a worker serves before it is replaced"),
        Setting(name: "MOCKCLOUD_FASTCGI_WAITS", defaultValue: "`\(Capacity.loopWaits)`", reader: .launcher,
                meaning: "FastCGI mode: reads waiting for a change each program's event loop holds"),
        Setting(name: "MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS", defaultValue: "`\(Capacity.loopWaitsPerAddress)`",
                reader: .launcher, meaning: "FastCGI mode: of those, the waits one client address may hold"),
        Setting(name: "MOCKCLOUD_HMAC_KEYS", defaultValue: "unset", reader: .programs,
                meaning: "key file: turns on signing of stored data"),
        Setting(name: "MOCKCLOUD_HMAC_REQUIRE", defaultValue: "unset", reader: .programs,
                meaning: "1: refuse unsigned documents"),
        Setting(name: "MOCKCLOUD_TOKENS", defaultValue: "unset", reader: .programs,
                meaning: "token file: every request needs a bearer token"),
        Setting(name: "MOCKCLOUD_INBOX_MAX_MESSAGES", defaultValue: "`100000`", reader: .inbox,
                meaning: "live messages one key may hold"),
        Setting(name: "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON", defaultValue: "`2592000` (30 days)", reader: .inbox,
                meaning: "seconds a deletion stays in the feed"),
        Setting(name: "MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS", defaultValue: "`1024`", reader: .inbox,
                meaning: "change-log records before compaction"),
        Setting(name: "MOCKCLOUD_MIN_FREE_MB", defaultValue: "`64`", reader: .programs,
                meaning: "free space below which writes answer 507"),
        Setting(name: "MOCKCLOUD_WAITS_PER_ADDRESS", defaultValue: "`4`", reader: .programs,
                meaning: "requests one client address may have waiting for a change at once"),
        Setting(name: "MOCKCLOUD_LIMITS", defaultValue: "unset", reader: .programs,
                meaning: "off: no per-address cap on requests in progress or on waits"),
        Setting(name: "MOCKCLOUD_ADMIN_SCRIPTS", defaultValue: "unset", reader: .admin,
                meaning: "where mockcloud-admin finds its shell subcommands"),
    ]
}
