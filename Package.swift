// swift-tools-version:6.0
import PackageDescription

// Each CGI program is started once per request, so start-up time is the
// service's whole cost: the programs import Glibc only and link statically.
// Sources/CStartup/startup.c explains the link-time replacement (`--wrap`:
// libcrypto's load-time CPU probe), and Benchmarks/symbol-order.sh the layout
// (what one request runs and touches packed together: fewer page faults),
// which it computes from the link map written here.
let startupDirectory = Context.packageDirectory + "/Sources/CStartup"
func staticExecutable(_ program: String) -> [LinkerSetting] {
    [
        .unsafeFlags([
            "-static-executable", "-use-ld=lld",
            "-Xlinker", "--wrap=OPENSSL_cpuid_setup",
            "-Xlinker", "--symbol-ordering-file=" + startupDirectory + "/symbol-order.txt",
            "-Xlinker", "--no-warn-symbol-ordering",
            "-Xlinker", "-Map=" + Context.packageDirectory + "/.build/" + program + ".map",
        ], .when(platforms: [.linux], configuration: .release))
    ]
}

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
        .target(name: "MockCloudCore", dependencies: ["COpenSSL", "CStartup"]),
        // OpenSSL's libcrypto, imported by Signing/ alone.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // Cheaper process start: argv without the runtime's /proc scan, and
        // libcrypto's CPU probe on demand (see startup.c).
        .target(name: "CStartup", exclude: ["symbol-order.txt"]),

        // The CGI programs: a few lines each.
        .executableTarget(
            name: "user-settings",
            dependencies: ["MockCloudCore"],
            linkerSettings: staticExecutable("user-settings")
        ),

        .executableTarget(
            name: "inbox",
            dependencies: ["MockCloudCore"],
            linkerSettings: staticExecutable("inbox")
        ),

        // The operator's tool: verify, sign and rotate a data directory.
        .executableTarget(name: "mockcloud-admin", dependencies: ["MockCloudCore"]),

        // Unit tests, one file per feature folder.
        .testTarget(name: "MockCloudCoreTests", dependencies: ["MockCloudCore"]),
        // The built programs run as processes: environment + stdin in, CGI out.
        .testTarget(name: "EndToEndTests", dependencies: ["user-settings", "inbox", "mockcloud-admin"]),
    ]
)
