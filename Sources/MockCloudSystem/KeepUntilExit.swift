/// The keep-long-strings-until-exit policy of the CGI programs.
///
/// A native string with room for 64 bytes or more has a slot for UTF-16
/// breadcrumbs, and the first release of such a string makes the runtime
/// look up a type by its name (Benchmarks/README.md, "Where the time goes",
/// 5.). A CGI process answers one request and exits, so it keeps
/// the long strings that `Sys.path` and the environment give it (a handful:
/// paths, a long data directory) and none is ever released before `exit`.
///
/// Off until `turnOn()`: `CGIProgram.serve` turns it on first thing, so the
/// release programs have it on wherever they run, in the end-to-end,
/// acceptance and stress tests too; the admin tool and the unit tests, which
/// live longer and run threads, keep nothing. Tests/budget/instructions.sh
/// fails when the programs run without it.
package enum KeepUntilExit {
    /// Strings shorter than this are stored inline or freed cheaply.
    package static let minimumLength = 64
    /// A request that walks many files (a compaction) keeps the first ones
    /// only: after these, one release costs little beside its work.
    package static let limit = 1024

    /// Written once, by the main thread, before any other thread exists.
    nonisolated(unsafe) private static var on = false
    nonisolated(unsafe) private static var kept: [String] = []

    /// Keeps long strings from now until the process exits. Call it before
    /// the process starts a second thread.
    package static func turnOn() {
        on = true
    }

    /// `text`, kept alive until the process exits when the policy is on and
    /// it is `minimumLength` bytes or longer.
    package static func keep(_ text: String) -> String {
        if on && text.utf8.count >= minimumLength && kept.count < limit { kept.append(text) }
        return text
    }
}
