import MockCloudConfig
import MockCloudSystem

/// The subcommands that drive the box rather than the data (`tls`, `doctor`,
/// `backup`, `restore`) are shell scripts beside the program: they run
/// openssl, `nginx -t`, flock(1) and tar, which a shell does plainly and
/// which the CGI programs must never link. `mockcloud-admin` checks the
/// command line (AdminCommand), finds the script and replaces itself with it.
///
/// Where: `$MOCKCLOUD_ADMIN_SCRIPTS`; else beside the executable as the
/// package installs it (`/usr/bin/../lib/mockcloud/admin`), or as a checkout
/// has it (`cgi-bin/../admin`, `.build/release/../../admin`).
package enum AdminScripts {
    /// Replaces this process with the script `name`; returns only when it
    /// cannot, with the line to print.
    package static func exec(_ name: String, _ arguments: [String], environment: Environment) -> String {
        let folders = directories(environment: environment)
        for folder in folders {
            let path = folder + "/" + name
            guard Sys.isExecutable(path) else { continue }
            return "mockcloud-admin: cannot run \(path): \(Sys.execute(path, arguments: arguments).errno)"
        }
        return "mockcloud-admin: \(name) is in none of " + folders.joined(separator: ", ")
            + " (set MOCKCLOUD_ADMIN_SCRIPTS to the folder that holds it)"
    }

    /// The folders to look in, in order.
    package static func directories(environment: Environment) -> [String] {
        if let given = ServiceConfig.adminScripts(environment) { return [given] }
        guard let executable = Sys.executablePath() else { return ["/usr/lib/mockcloud/admin"] }
        let folder = executable.lastIndex(of: "/").map { String(executable[..<$0]) } ?? "."
        return [folder + "/../lib/mockcloud/admin", folder + "/../admin", folder + "/../../admin"]
    }
}
