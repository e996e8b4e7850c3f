// swift-tools-version:6.0
import PackageDescription

// Each CGI program is started once per request, so start-up time is the
// service's whole cost: the programs import Glibc only and link statically.
// Sources/CStartup/startup.c explains the `--wrap` (libcrypto's load-time CPU
// probe), Sources/CArgv/argv.c what replaces the runtime's argv scan, and
// Benchmarks/symbol-order.sh the layout (what one request runs and touches,
// packed together: fewer page faults per process).
let startupDirectory = Context.packageDirectory + "/Sources/CStartup"
let staticExecutable: [LinkerSetting] = [
    .unsafeFlags([
        "-static-executable", "-use-ld=lld",
        "-Xlinker", "--wrap=OPENSSL_cpuid_setup",
        "-Xlinker", "--symbol-ordering-file=" + startupDirectory + "/symbol-order.txt",
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
    ],
    dependencies: [],
    targets: [
        // Everything the programs share: CGI, JSON, validation, storage, routes, signing.
        .target(name: "MockCloudCore", dependencies: ["COpenSSL", "CStartup"], swiftSettings: directMetadata),
        // OpenSSL's libcrypto, imported by Signing/ alone.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // libcrypto's CPU probe on demand (see startup.c), and the release
        // layout of the static programs (symbol-order.txt).
        .target(name: "CStartup", exclude: ["symbol-order.txt"], cSettings: dwarf4),
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
            dependencies: ["MockCloudCore", "CArgv"],
            swiftSettings: directMetadata,
            linkerSettings: staticExecutable
        ),

        .executableTarget(
            name: "inbox",
            dependencies: ["MockCloudCore", "CArgv"],
            swiftSettings: directMetadata,
            linkerSettings: staticExecutable
        ),

        // The operator's tool: verify, sign and rotate a data directory.
        // Static like the CGI programs: the package runs it on a Debian box
        // without the Swift toolchain.
        .executableTarget(name: "mockcloud-admin", dependencies: ["MockCloudCore"], linkerSettings: staticExecutable),

        // Unit tests, one file per feature folder.
        .testTarget(name: "MockCloudCoreTests", dependencies: ["MockCloudCore"]),
        // The built programs run as processes: environment + stdin in, CGI out.
        .testTarget(name: "EndToEndTests", dependencies: ["user-settings", "inbox", "mockcloud-admin"]),
    ]
)
