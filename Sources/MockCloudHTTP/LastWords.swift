import MockCloudStore
import MockCloudSystem

/// What a CGI process says when it cannot finish: on its time limit
/// (SIGALRM) or a fatal signal (a trap of a Swift runtime check, a fault),
/// the JSON answer written to stdout unless the answer had begun, and for a
/// fatal signal a line to stderr; then it exits at once. Which answer, the
/// one for "nothing changed" or for "maybe changed", follows the store's
/// `WriteProgress`. The texts are static: a signal handler may not allocate.
///
/// A FastCGI worker says the same over the connection of the request it is
/// serving (`beginRequest`): the answer as STDOUT, its END_REQUEST, the log
/// line as STDERR (and on its own stderr); between requests it says nothing.
enum LastWords {
    nonisolated(unsafe) private static var timeOut: (unchanged: StaticString, maybe: StaticString) = ("", "")
    nonisolated(unsafe) private static var crash: (unchanged: StaticString, maybe: StaticString) = ("", "")
    nonisolated(unsafe) private static var crashLog: StaticString = ""
    nonisolated(unsafe) private static var answerBegun = false
    /// The FastCGI connection of the request in progress (-1: CGI, or none).
    nonisolated(unsafe) private static var connection: Int32 = -1
    nonisolated(unsafe) private static var requestID: UInt16 = 0
    /// Room for a record's header and END_REQUEST, made before any signal.
    nonisolated(unsafe) private static var record = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)

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
            // No answer left to give (a FastCGI worker between requests, or
            // the process's own answer already begun): a line that says so,
            // and the signal's own end, which the master logs as a crash.
            if LastWords.answerBegun {
                LastWords.log("mockcloud: the program crashed (fatal signal) with no answer left to give (between requests, or its own answer begun)\n")
                Sys.dieFromHandler(by: number)
            }
            // The line first: nginx reads no FastCGI stderr after the request's end.
            LastWords.log(LastWords.crashLog)
            LastWords.say(WriteProgress.mayHaveChanged ? LastWords.crash.maybe : LastWords.crash.unchanged)
            Sys.exitFromHandler(128 + number)
        }
    }

    /// From now on the process's own answer is being written: a signal
    /// must not write a second one.
    static func answerBegins() {
        answerBegun = true
    }

    /// A FastCGI worker's request `id` on `connection` begins: nothing is
    /// said of it yet.
    static func beginRequest(connection: FileDescriptor, id: UInt16) {
        record[0] = FastCGI.version    // made now, not first in a handler
        requestID = id
        answerBegun = false
        self.connection = connection.rawValue
    }

    /// The worker's request has its answer: until the next, a signal says
    /// nothing to anyone.
    static func endRequest() {
        answerBegun = true
        connection = -1
    }

    private static func say(_ answer: StaticString) {
        if answerBegun { return }
        if connection < 0 {
            Sys.writeFromHandler(1, answer)
            return
        }
        writeRecord(FastCGI.RecordType.stdout.rawValue, answer.utf8Start, answer.utf8CodeUnitCount)
        writeRecord(FastCGI.RecordType.stdout.rawValue, answer.utf8Start, 0)
        header(FastCGI.RecordType.endRequest.rawValue, 8)
        for i in 8..<16 { record[i] = 0 }
        record[11] = 1    // application status 1; protocol status: complete
        Sys.writeFromHandler(connection, record, count: 16)
    }

    private static func log(_ line: StaticString) {
        if connection >= 0 { writeRecord(FastCGI.RecordType.stderr.rawValue, line.utf8Start, line.utf8CodeUnitCount) }
        Sys.writeFromHandler(2, line)
    }

    private static func writeRecord(_ type: UInt8, _ bytes: UnsafePointer<UInt8>, _ count: Int) {
        header(type, count)
        Sys.writeFromHandler(connection, record, count: 8)
        if count > 0 { Sys.writeFromHandler(connection, bytes, count: count) }
    }

    private static func header(_ type: UInt8, _ count: Int) {
        record[0] = 1
        record[1] = type
        record[2] = UInt8(requestID >> 8)
        record[3] = UInt8(requestID & 0xff)
        record[4] = UInt8((count >> 8) & 0xff)
        record[5] = UInt8(count & 0xff)
        record[6] = 0
        record[7] = 0
    }
}
