import MockCloudStore
import MockCloudSystem

/// What a CGI process says when it cannot finish: on its time limit
/// (SIGALRM) or a fatal signal (a trap of a Swift runtime check, a fault),
/// the JSON answer written to stdout unless the answer had begun, and for a
/// fatal signal a line to stderr; then it exits at once. Which answer, the
/// one for "nothing changed" or for "maybe changed", follows the store's
/// `WriteProgress`. The texts are static: a signal handler may not allocate.
enum LastWords {
    nonisolated(unsafe) private static var timeOut: (unchanged: StaticString, maybe: StaticString) = ("", "")
    nonisolated(unsafe) private static var crash: (unchanged: StaticString, maybe: StaticString) = ("", "")
    nonisolated(unsafe) private static var crashLog: StaticString = ""
    nonisolated(unsafe) private static var answerBegun = false

    /// Installs the handlers for SIGALRM and every fatal signal.
    static func install(
        timeOut: (unchanged: StaticString, maybe: StaticString),
        crash: (unchanged: StaticString, maybe: StaticString), crashLog: StaticString
    ) {
        Self.timeOut = timeOut
        Self.crash = crash
        Self.crashLog = crashLog
        Sys.onAlarm { _ in
            LastWords.say(WriteProgress.mayHaveChanged ? LastWords.timeOut.maybe : LastWords.timeOut.unchanged)
            Sys.exitFromHandler(1)
        }
        Sys.onFault { number in
            LastWords.say(WriteProgress.mayHaveChanged ? LastWords.crash.maybe : LastWords.crash.unchanged)
            Sys.writeFromHandler(2, LastWords.crashLog)
            Sys.exitFromHandler(128 + number)
        }
    }

    /// From now on the process's own answer is being written: a signal
    /// must not write a second one.
    static func answerBegins() {
        answerBegun = true
    }

    private static func say(_ answer: StaticString) {
        if !answerBegun { Sys.writeFromHandler(1, answer) }
    }
}
