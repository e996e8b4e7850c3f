import MockCloudClient
import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// What the tool prints: a progress line on a terminal (stderr), a summary
/// for people, or one JSON object on stdout for scripts (`--json`).
struct Output {
    let json: Bool
    let isTerminal = Sys.isTerminal(.standardError)
    private var progressShown = false

    init(json: Bool) { self.json = json }

    /// Rewrites the progress line when stderr is a terminal.
    mutating func progress(_ text: String) {
        guard isTerminal else { return }
        progressShown = true
        write(.standardError, "\r\u{1B}[K" + text)
    }

    /// Ends the progress line.
    mutating func endProgress() {
        if progressShown { write(.standardError, "\n") }
        progressShown = false
    }

    /// The result: `fields` as one JSON object with `--json`, else `text`
    /// (also each change while following: a line each, as it happens).
    mutating func result(_ text: String, _ fields: [(String, JSONValue)]) {
        endProgress()
        if json {
            write(.standardOutput, String(decoding: JSONPrinter.compact(.object(JSONObject(fields.map { JSONMember($0.0, $0.1) }))), as: UTF8.self) + "\n")
        } else if !text.isEmpty {
            write(.standardOutput, text + "\n")
        }
    }

    /// The usage after a command-line error, on stderr.
    mutating func usage(_ text: String) {
        endProgress()
        write(.standardError, text + "\n")
    }

    /// A line on stderr.
    mutating func error(_ text: String) {
        endProgress()
        write(.standardError, "mockcloud-sync: " + text + "\n")
    }

    private func write(_ fd: FileDescriptor, _ text: String) {
        try? Sys.writeAll(fd, Array(text.utf8))
    }
}

extension JSONValue {
    /// A JSON integer.
    static func int(_ value: Int) -> JSONValue { .number(String(value)) }
    /// A body or document as a JSON value (it was parsed once already).
    static func document(_ text: JSONText) -> JSONValue {
        (try? JSONParser.parse(text.bytes, maxDepth: JSONParser.storedDocumentMaxDepth)) ?? .null
    }
}
