import Foundation
import MockCloudHTTPTestSupport

/// Runs a built CGI program as fcgiwrap does: a clean environment of CGI
/// meta-variables, the body on stdin (then closed), stdout read to EOF.
struct ProgramRunner {
    /// Where the programs are: `MOCKCLOUD_BIN_DIR` (`make test` points it at the
    /// installed release programs in cgi-bin/), else this package's debug build.
    static let binDirectory: URL = {
        if let dir = ProcessInfo.processInfo.environment["MOCKCLOUD_BIN_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug")
    }()

    /// What a program printed, split into the CGI parts.
    struct Output {
        var status: Int
        var statusLine: String
        var headers: [(String, String)]
        var body: String
        var stderr: String
        var exitCode: Int32

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        /// The body as a JSON object, for field checks.
        var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        }
    }

    let program: String
    let dataDirectory: URL

    /// Runs one request. `headers` are HTTP names (`X-User-Key`).
    func run(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil,
        contentLength: String? = nil, extraEnvironment: [String: String] = [:]
    ) throws -> Output {
        let process = Process()
        process.executableURL = Self.binDirectory.appendingPathComponent(program)
        let bodyBytes = Data((body ?? "").utf8)
        var environment = cgiVariables(
            method: method, path: path, headers: headers, body: body.map { Array($0.utf8) },
            contentLength: contentLength, extra: extraEnvironment)
        if extraEnvironment["MOCKCLOUD_DATA"] == nil { environment["MOCKCLOUD_DATA"] = dataDirectory.path }
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        try stdin.fileHandleForWriting.write(contentsOf: bodyBytes)
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Self.parse(out, stderr: err, exitCode: process.terminationStatus)
    }

    static func parse(_ data: Data, stderr: Data, exitCode: Int32) -> Output {
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
        var headers: [(String, String)] = []
        var statusLine = ""
        for line in head.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "Status" { statusLine = value } else { headers.append((name, value)) }
        }
        let status = Int(statusLine.prefix(3)) ?? 0
        return Output(
            status: status, statusLine: statusLine, headers: headers, body: body,
            stderr: String(decoding: stderr, as: UTF8.self), exitCode: exitCode)
    }
}
