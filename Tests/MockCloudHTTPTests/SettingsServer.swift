import Foundation
import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// A `SettingsRoute` over a fresh data directory with a fixed clock; requests
/// are answered as the CGI edge answers them (errors become JSON answers).
struct SettingsServer {
    /// 2026-05-18T04:43:04.134233Z, the clock every write sees.
    static let now: Timestamp.Micros = 1_779_079_384_134_233
    static let stamp = "20260518T044304.134233Z"
    static let notFoundBody = #"{"error": "no settings stored for this user"}"#

    let data: TemporaryDirectory
    let route: SettingsRoute
    /// What the route wrote to the server log.
    let log = LogLines()

    init(integrity: Integrity = .off) throws {
        data = try TemporaryDirectory()
        let log = self.log
        route = SettingsRoute(dataRoot: data.path, integrity: integrity, clock: { SettingsServer.now }, log: { log.append($0) })
    }

    @discardableResult
    func send(
        _ method: String, _ body: String = "", key: String? = "u1", headers: [String: String] = [:],
        contentType: String = "", path: String = Endpoint.settings.path
    ) -> CGIResponse {
        send(method, bytes: Array(body.utf8), key: key, headers: headers, contentType: contentType, path: path)
    }

    func send(
        _ method: String, bytes: [UInt8], key: String? = "u1", headers: [String: String] = [:],
        contentType: String = "", path: String = Endpoint.settings.path
    ) -> CGIResponse {
        var all = headers
        if let key { all["X-User-Key"] = key }
        let request = CGIRequest(method: method, path: path, headers: all, contentType: contentType, body: bytes)
        return answer { try route.respond(to: request) }
    }

    /// `PATCH` with the merge-patch content type.
    @discardableResult
    func patch(_ body: String, headers: [String: String] = [:]) -> CGIResponse {
        send("PATCH", body, headers: headers, contentType: "application/merge-patch+json")
    }

    /// The stored file of `u1`, as text and as bytes.
    var file: String? { data.text(of: "user_settings/u1.json") }
    var fileBytes: [UInt8]? { data.bytes(of: "user_settings/u1.json") }
    /// The strong tag of the stored file.
    var etag: String? { fileBytes.map { EntityTag(of: $0).text } }

    /// Writes `u1`'s file as the Python mock cloud (or a person) would.
    func storeByHand(_ text: String) throws {
        try data.write(text, to: "user_settings/u1.json")
    }
}

/// Lines a route sent to the server log, in order.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []

    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
}
