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

// Less run-time type work per process (Benchmarks/README.md, "Where the
// time goes"): concrete generic types (`[JSONMember]`, `Optional<...>`) are
// reached through their metadata accessors, not by demangling their names
// (12k instructions a process), and copies and destroys of optional structs
// are lowered directly, not through Optional's value witnesses (whose
// first use builds Optional's metadata: 25k in every inbox request).
// Both are hidden front-end flags of Swift 6.3: should a toolchain drop
// one, remove it; only speed changes.
let directMetadata: [SwiftSetting] = [
    .unsafeFlags([
        "-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors",
        "-Xfrontend", "-disable-type-layout",
    ], .when(configuration: .release))
]

// valgrind 3.19 (Debian 12), which Benchmarks/symbol-order.sh profiles the
// programs with, cannot read the DWARF 5 that clang writes by default.
let dwarf4: [CSetting] = [.unsafeFlags(["-gdwarf-4"])]

let package = Package(
    name: "MockCloud",
    products: [
        .executable(name: "user-settings", targets: ["user-settings"]),
        .executable(name: "inbox", targets: ["inbox"]),
        .executable(name: "mockcloud-admin", targets: ["mockcloud-admin"]),
        // The sync client for devices (the mirror box, the app) and its tool.
        .library(name: "MockCloudClient", targets: ["MockCloudClient", "MockCloudURLSession"]),
        .executable(name: "mockcloud-sync", targets: ["mockcloud-sync"]),
    ],
    dependencies: [],
    targets: [
        // The libraries, lowest first. Each imports only the ones above it in
        // this list (`make test` builds with SwiftPM's explicit import check,
        // so an import of a higher layer fails the build); data flows from
        // main.swift through a request, a route and a store to a response.

        // System calls (EINTR, partial I/O, errno), atomic file writes,
        // random bytes, byte and time codecs, the keep-strings-until-exit
        // policy. Knows nothing of JSON, stores or HTTP.
        .target(name: "MockCloudSystem", swiftSettings: directMetadata),
        // The JSON value that keeps member order and number text, the strict
        // parser and the printers that write what Python's json.dumps writes.
        .target(name: "MockCloudJSON", dependencies: ["MockCloudSystem"], swiftSettings: directMetadata),
        // The data directory: settings and inbox stores, the change log,
        // per-key locks, HMAC signing (the only user of libcrypto), key and
        // token files. Errors here say what went wrong; no HTTP status.
        .target(
            name: "MockCloudStore",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "COpenSSL", "CStartup"],
            swiftSettings: directMetadata
        ),
        // Configuration: the process environment, read in one place
        // (ServiceConfig), and the one list of the service's settings
        // (Setting.all). Below HTTP, so that the admin tool needs no routes.
        .target(
            name: "MockCloudConfig",
            dependencies: ["MockCloudSystem", "MockCloudStore"],
            swiftSettings: directMetadata
        ),
        // The CGI edge: request and response, the mapping of every error to
        // a status and a sentence, the two routes and bearer-token access.
        .target(
            name: "MockCloudHTTP",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudStore", "MockCloudConfig"],
            swiftSettings: directMetadata
        ),

        // The operator's tool: verify, sign and rotate a data directory, make
        // bearer tokens. Reads its defaults through ServiceConfig.
        .target(
            name: "MockCloudAdmin",
            dependencies: ["MockCloudSystem", "MockCloudStore", "MockCloudConfig"],
            swiftSettings: directMetadata
        ),

        // The sync client: async/await over a small transport protocol (libcurl
        // on Linux, URLSession on Apple platforms), bulk uploads, the change
        // feed with 410 recovery, settings with conditions, anchor stores.
        // Reuses System and JSON below it; no server target imports it.
        .target(
            name: "MockCloudClient",
            dependencies: [
                "MockCloudSystem", "MockCloudJSON",
                .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
                .target(name: "CCurl", condition: .when(platforms: [.linux])),
            ]
        ),
        // URLSessionTransport (the app's), a module of its own: on Linux it
        // brings Foundation, which mockcloud-sync does without. CCurl on
        // Linux for the trust store libcurl reads (Sources/MockCloudURLSession).
        .target(
            name: "MockCloudURLSession",
            dependencies: ["MockCloudClient", .target(name: "CCurl", condition: .when(platforms: [.linux]))]
        ),
        // mockcloud-sync's commands (push, pull, settings), its options,
        // output and exit codes, over MockCloudClient.
        .target(name: "MockCloudSync", dependencies: ["MockCloudClient", "MockCloudSystem", "MockCloudJSON"]),

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
            swiftSettings: directMetadata,
            linkerSettings: staticExecutable
        ),
        .executableTarget(
            name: "inbox",
            dependencies: ["MockCloudHTTP", "MockCloudConfig", "CArgv"],
            swiftSettings: directMetadata,
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
        // and the Swift runtime statically: no toolchain on the device.
        .executableTarget(
            name: "mockcloud-sync",
            dependencies: ["MockCloudSync", "MockCloudSystem"],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))]
        ),

        // The library alone over either transport: the simulated Wi-Fi link
        // (Benchmarks/lan/bench_client.py) and Tests/client/run.py.
        .executableTarget(
            name: "client-bench",
            dependencies: ["MockCloudClient", "MockCloudURLSession", "MockCloudSystem"],
            path: "Benchmarks/client-bench"
        ),

        // What several test targets share: the one temporary-directory
        // helper, stdin from a pipe, JSON as text, signing keys.
        .target(
            name: "MockCloudTestSupport",
            dependencies: ["MockCloudSystem", "MockCloudJSON", "MockCloudStore"],
            path: "Tests/MockCloudTestSupport"
        ),
        // Unit tests, one target per library, a file per type or suite.
        .testTarget(name: "MockCloudSystemTests", dependencies: ["MockCloudSystem", "MockCloudTestSupport"]),
        .testTarget(name: "MockCloudJSONTests", dependencies: ["MockCloudJSON", "MockCloudSystem", "MockCloudTestSupport"]),
        .testTarget(
            name: "MockCloudStoreTests",
            dependencies: ["MockCloudStore", "MockCloudJSON", "MockCloudSystem", "MockCloudTestSupport"]
        ),
        .testTarget(name: "MockCloudConfigTests", dependencies: ["MockCloudConfig", "MockCloudStore", "MockCloudSystem"]),
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
                "MockCloudHTTP", "MockCloudConfig", "MockCloudStore", "MockCloudJSON", "MockCloudSystem",
                "MockCloudTestSupport", "MockCloudHTTPTestSupport",
            ]
        ),
        .testTarget(
            name: "MockCloudAdminTests",
            dependencies: [
                "MockCloudAdmin", "MockCloudConfig", "MockCloudHTTP", "MockCloudStore", "MockCloudSystem",
                "MockCloudTestSupport", "MockCloudHTTPTestSupport",
            ]
        ),
        .testTarget(
            name: "MockCloudClientTests",
            dependencies: ["MockCloudClient", "MockCloudSync", "MockCloudJSON", "MockCloudSystem", "MockCloudTestSupport"]
        ),
        // The built programs run as processes: environment + stdin in, CGI out.
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["user-settings", "inbox", "mockcloud-admin", "MockCloudTestSupport", "MockCloudHTTPTestSupport"]
        ),
    ]
)
