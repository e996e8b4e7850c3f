// swift-tools-version:6.0
import PackageDescription

// The layers, lowest first, and why: docs/ARCHITECTURE.md.
//
// Each CGI program is started once per request, so start-up time is the
// service's whole cost: the programs import Glibc only and link statically.
// Sources/CStartup/startup.c explains the `--wrap` (libcrypto's load-time CPU
// probe), Sources/CArgv/argv.c what replaces the runtime's argv scan, and
// Benchmarks/symbol-order.sh the layout (what one request runs and touches,
// packed together: fewer page faults per process).
// The layout list is generated (make symbol-order) and checked for staleness
// by `make test` (Tests/budget/symbol-order.sh); it is data, not a source.
let symbolOrder = Context.packageDirectory + "/Benchmarks/symbol-order.txt"
let staticExecutable: [LinkerSetting] = [
    .unsafeFlags([
        "-static-executable", "-use-ld=lld",
        "-Xlinker", "--wrap=OPENSSL_cpuid_setup",
        "-Xlinker", "--symbol-ordering-file=" + symbolOrder,
        "-Xlinker", "--no-warn-symbol-ordering",
    ], .when(platforms: [.linux], configuration: .release))
]

// The speed flags of the Swift code (hidden front-end flags that cut the
// run-time type work each short-lived CGI process does) are not here: a
// package that depends on this one by version may not carry unsafe flags
// in the closure of a product it uses, and MockCloudJSON and MockCloudWire
// are in both the server's and the client's. `make build` passes them to
// its release build (Makefile, SPEED_FLAGS); a plain `swift build` makes
// the same programs, only slower (Tests/budget/instructions.sh holds the
// installed ones to their budgets).

// valgrind 3.19 (Debian 12), which Benchmarks/symbol-order.sh profiles the
// programs with, cannot read the DWARF 5 that clang writes by default.
let dwarf4: [CSetting] = [.unsafeFlags(["-gdwarf-4"])]

let package = Package(
    name: "MockCloud",
    // For MockCloudClient, the one product apps depend on: iOS 16 is the
    // app's deployment target (HealthKit's sync identifiers and async
    // URLSession are older; `Task.sleep(for:)` and `Duration` need 16), and
    // macOS 13 is its desktop twin of the same year, for tools and tests on
    // a Mac. The server builds on Linux only.
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .executable(name: "user-settings", targets: ["user-settings"]),
        .executable(name: "inbox", targets: ["inbox"]),
        .executable(name: "mockcloud-admin", targets: ["mockcloud-admin"]),
        // The sync client for devices (the mirror box, the app) and its tool.
        .library(name: "MockCloudClient", targets: ["MockCloudClient"]),
        // HealthKit and the phone's lifecycle over MockCloudClient (docs/HEALTHKIT.md).
        .library(name: "MockCloudHealth", targets: ["MockCloudHealth"]),
        .executable(name: "mockcloud-sync", targets: ["mockcloud-sync"]),
    ],
    dependencies: [],
    targets: [
        // The libraries, lowest first. Each imports only the ones above it in
        // this list (`make test` builds with SwiftPM's explicit import check,
        // so an import of a higher layer fails the build); data flows from
        // main.swift through a request, a route and a store to a response.

        // Portable (Swift's standard library only, no flags): what both the
        // server and the client build on, on Linux and on Apple platforms.
        // The JSON value that keeps member order and number text, the strict
        // parser and the printers that write what Python's json.dumps
        // writes, and the byte codecs they use (ASCII: digits, hex, base64).
        .target(name: "MockCloudJSON"),
        // The wire, defined once (docs/API.md): the paths and their methods
        // (Endpoint), the header names, the identifier shapes (UserKey,
        // DeviceID, MessageID), the anchor, the envelope and the feed page,
        // the encode/decode pairs of what one side writes and the other reads
        // (the bulk request and results, the member times, X-Merge-Kept),
        // JSONText, the time stamps, the request limits (WireLimits) and a
        // failed write's `changed`.
        .target(name: "MockCloudWire", dependencies: ["MockCloudJSON"]),
        // The command-line tools' one parser: a tool describes its commands,
        // arguments and options once, and gets parsing, usage and errors.
        .target(name: "MockCloudCommandLine"),

        // The server's libraries, Linux only, lowest first.
        // System calls (EINTR, partial I/O, errno, signals), atomic file
        // writes and how much of a failed one a reader saw, random bytes,
        // the clock, the keep-strings-until-exit policy. Knows nothing of
        // JSON, the wire, stores or HTTP.
        .target(name: "MockCloudSystem"),
        // The data directory (its layout: DataDirectory): settings and inbox
        // stores, the change log, per-key locks, HMAC signing (the only user
        // of libcrypto), key and token files, the write phases. Errors here
        // say what went wrong; no HTTP status, no deployment facts.
        .target(
            name: "MockCloudStore",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudWire", "COpenSSL", "CStartup"]
        ),
        // Configuration: the process environment, read in one place
        // (ServiceConfig), the one list of the service's settings
        // (Setting.all), and what the deployment carries at once (Capacity).
        // Below HTTP, so that the admin tool needs no routes.
        .target(
            name: "MockCloudConfig",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudStore"]
        ),
        // The CGI edge: request and response, the mapping of every error to
        // a status and a sentence, the two routes, bearer-token access and a
        // dying process's last answer (LastWords).
        .target(
            name: "MockCloudHTTP",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudWire", "MockCloudStore", "MockCloudConfig"]
        ),

        // The operator's tool: verify, sign and rotate a data directory, make
        // bearer tokens. Reads its defaults through ServiceConfig.
        .target(
            name: "MockCloudAdmin",
            dependencies: ["MockCloudSystem", "MockCloudWire", "MockCloudStore", "MockCloudConfig", "MockCloudCommandLine"]
        ),

        // The sync client, the library apps add by version: async/await over
        // a small transport protocol (URLSession everywhere, libcurl on
        // Linux), bulk uploads, the change feed with 410 recovery, settings
        // with conditions, the app's flows. Portable: the wire and JSON
        // below it, Foundation (and Security, CryptoKit on Apple platforms;
        // libcrypto, libcurl on Linux) behind one seam (Platform.swift); no
        // Glibc, no server target, no unsafe flags anywhere in its closure.
        .target(
            name: "MockCloudClient",
            dependencies: [
                "MockCloudJSON", "MockCloudWire",
                .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
                .target(name: "CCurl", condition: .when(platforms: [.linux])),
            ]
        ),
        // The iPhone's side of the client: the mirror's scans into HealthKit
        // (HealthKitScans, a ChangeApplier), other sources' body samples up
        // to the box (HealthImport), and the engine kept running as the
        // phone comes and goes (SyncLifecycle). Its core is portable and
        // tested on Linux against a fake health store (HealthStore, the
        // seam); the HealthKit, Network and BackgroundTasks adapters are
        // behind `#if canImport` and compiled by `make check-ios`.
        .target(name: "MockCloudHealth", dependencies: ["MockCloudClient", "MockCloudJSON", "MockCloudWire"]),
        // mockcloud-sync's commands (push, pull, settings), its options,
        // output and exit codes, over MockCloudClient. A Linux tool: it uses
        // MockCloudSystem for its folders, signals and file watches.
        .target(
            name: "MockCloudSync",
            dependencies: ["MockCloudClient", "MockCloudCommandLine", "MockCloudSystem", "MockCloudJSON", "MockCloudWire"]
        ),

        // OpenSSL's libcrypto: MockCloudStore's SHA-256 and HMAC, and the
        // client's SHA-256 (CA fingerprints, the push state).
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // libcurl (Debian's OpenSSL flavour), imported by the client's
        // CurlTransport and by URLSessionTransport's trust store check on
        // Linux; shim.h wraps the variadic curl_easy_setopt.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libcrypto's CPU probe on demand (see startup.c).
        .target(name: "CStartup", cSettings: dwarf4),
        // argv from glibc instead of the runtime's /proc scan; compiled into
        // the static release programs only (see argv.c).
        .target(
            name: "CArgv",
            cSettings: [
                .define("MOCKCLOUD_STATIC_ARGV", .when(platforms: [.linux], configuration: .release)),
            ] + dwarf4
        ),

        // The CGI programs: a few lines each.
        .executableTarget(
            name: "user-settings",
            dependencies: ["MockCloudHTTP", "MockCloudConfig", "CArgv"],
            linkerSettings: staticExecutable
        ),
        .executableTarget(
            name: "inbox",
            dependencies: ["MockCloudHTTP", "MockCloudConfig", "CArgv"],
            linkerSettings: staticExecutable
        ),
        // Static like the CGI programs: the package runs it on a Debian box
        // without the Swift toolchain.
        .executableTarget(
            name: "mockcloud-admin",
            dependencies: ["MockCloudAdmin", "MockCloudConfig", "MockCloudSystem"],
            linkerSettings: staticExecutable
        ),

        // The device's sync tool. libcurl's static archive needs Kerberos and
        // LDAP archives Debian does not ship, so it links libcurl dynamically
        // and the Swift runtime and Foundation statically (`make build`
        // passes --static-swift-stdlib: a linker flag alone would miss the
        // archives static Foundation needs): no toolchain on the device.
        .executableTarget(name: "mockcloud-sync", dependencies: ["MockCloudSync", "MockCloudSystem"]),

        // The library alone over either transport: the simulated Wi-Fi link
        // (Benchmarks/lan/bench_client.py) and Tests/client/run.py.
        .executableTarget(
            name: "client-bench",
            dependencies: ["MockCloudClient", "MockCloudSystem", "MockCloudWire"],
            path: "Benchmarks/client-bench"
        ),

        // The sync guide's example (docs/SYNC.md), compiled here (swift build,
        // make test) and for iOS (make check-ios); ReadmeExampleTests keeps the
        // guide's copy the same.
        .target(name: "MockCloudReadmeExample", dependencies: ["MockCloudClient"], path: "Tests/ReadmeExample"),

        // What several test targets share, portable (Foundation only, so the
        // client's tests that use it run on a Mac unchanged): the one
        // temporary-directory helper, JSON as text, a repository's files.
        .target(
            name: "MockCloudPortableTestSupport",
            dependencies: ["MockCloudJSON"],
            path: "Tests/MockCloudPortableTestSupport"
        ),
        // What the server's test targets share besides: stdin from a pipe,
        // signing keys; it re-exports the portable helpers.
        .target(
            name: "MockCloudTestSupport",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudWire", "MockCloudStore", "MockCloudPortableTestSupport"],
            path: "Tests/MockCloudTestSupport"
        ),
        // The client's scripted box (FakeServer) and its helpers, portable:
        // for both client test targets.
        .target(
            name: "MockCloudClientTestSupport",
            dependencies: ["MockCloudClient", "MockCloudJSON", "MockCloudWire"],
            path: "Tests/MockCloudClientTestSupport"
        ),
        // Unit tests, one target per library, a file per type or suite.
        .testTarget(name: "MockCloudSystemTests", dependencies: ["MockCloudSystem", "MockCloudTestSupport"]),
        .testTarget(name: "MockCloudJSONTests", dependencies: ["MockCloudJSON", "MockCloudSystem", "MockCloudTestSupport"]),
        .testTarget(
            name: "MockCloudWireTests",
            dependencies: ["MockCloudWire", "MockCloudJSON", "MockCloudSystem", "MockCloudTestSupport"]
        ),
        .testTarget(
            name: "MockCloudStoreTests",
            dependencies: ["MockCloudStore", "MockCloudJSON", "MockCloudWire", "MockCloudSystem", "MockCloudTestSupport"]
        ),
        .testTarget(name: "MockCloudCommandLineTests", dependencies: ["MockCloudCommandLine"]),
        .testTarget(
            name: "MockCloudConfigTests",
            dependencies: ["MockCloudConfig", "MockCloudStore", "MockCloudSystem", "MockCloudTestSupport"]
        ),
        // Requests as a test describes them (method, path, headers), for the
        // route tests and the admin tests that store data through the routes.
        .target(
            name: "MockCloudHTTPTestSupport",
            dependencies: ["MockCloudHTTP", "MockCloudConfig"],
            path: "Tests/MockCloudHTTPTestSupport"
        ),
        .testTarget(
            name: "MockCloudHTTPTests",
            dependencies: [
                "MockCloudHTTP", "MockCloudConfig", "MockCloudStore", "MockCloudJSON", "MockCloudWire", "MockCloudSystem",
                "MockCloudTestSupport", "MockCloudHTTPTestSupport",
            ]
        ),
        .testTarget(
            name: "MockCloudAdminTests",
            dependencies: [
                "MockCloudAdmin", "MockCloudCommandLine", "MockCloudConfig", "MockCloudHTTP", "MockCloudStore", "MockCloudSystem",
                "MockCloudTestSupport", "MockCloudHTTPTestSupport",
            ]
        ),
        // The client library's tests, without Glibc or any server target:
        // the journal and the queue, reconciliation, uploads, the feed and the
        // engine against a scripted box. `swift test` runs them here, and
        // they run on a Mac unchanged.
        .testTarget(
            name: "MockCloudClientCoreTests",
            dependencies: [
                "MockCloudClient", "MockCloudJSON", "MockCloudWire", "MockCloudPortableTestSupport",
                "MockCloudClientTestSupport", "MockCloudReadmeExample",
            ]
        ),
        // The sync tool's tests (push, its ledger and watch, the command line),
        // which use the Linux system layer.
        .testTarget(
            name: "MockCloudClientTests",
            dependencies: [
                "MockCloudClient", "MockCloudSync", "MockCloudCommandLine", "MockCloudJSON", "MockCloudWire", "MockCloudSystem",
                "MockCloudTestSupport", "MockCloudClientTestSupport",
            ]
        ),
        // The built programs run as processes: environment + stdin in, CGI out.
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["user-settings", "inbox", "mockcloud-admin", "MockCloudTestSupport", "MockCloudHTTPTestSupport"]
        ),

        // MockCloudHealth's: the HealthKit guide's integration
        // (docs/HEALTHKIT.md), compiled here and for iOS like the sync
        // guide's, and the tests of its portable core, against a fake
        // health store (HealthExampleTests keeps the guide's copy the same).
        .target(name: "MockCloudHealthExample", dependencies: ["MockCloudClient", "MockCloudHealth"], path: "Tests/HealthExample"),
        .testTarget(
            name: "MockCloudHealthTests",
            dependencies: [
                "MockCloudHealth", "MockCloudClient", "MockCloudJSON", "MockCloudWire", "MockCloudTestSupport",
                "MockCloudHealthExample",
            ]
        ),
    ]
)
