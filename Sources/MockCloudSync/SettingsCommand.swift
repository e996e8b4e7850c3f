import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// `settings get | put FILE | patch FILE | merge FILE --edited-at TIME`.
enum SettingsCommand {
    /// Prints the stored document (pretty) and its ETag on stderr; with
    /// `--json`, `{"etag": …, "document": …}`. No settings stored: exit 6.
    static func get(_ client: BoxClient, _ output: inout Output) async throws -> Int32 {
        guard let settings = try await client.settings() else {
            throw ClientError.refused(status: 404, error: "no settings stored for this user")
        }
        show(settings, status: "stored", &output)
        return SyncCommand.done
    }

    /// PUT (or merge-PATCH) the JSON object in `file`. On 409/412 the
    /// server's current document is printed and the exit status is 1.
    static func write(
        _ client: BoxClient, file: String, patch: Bool, ifMatch: String?, _ output: inout Output
    ) async throws -> Int32 {
        let document = try read(file)
        let write = patch
            ? try await client.patchSettings(document, ifMatch: ifMatch)
            : try await client.putSettings(document, ifMatch: ifMatch)
        switch write {
        case .written(let settings):
            show(settings, status: "written", &output)
            return SyncCommand.done
        case .conflict(let status, let error, let current):
            output.error("not written (\(status)): \(error)")
            var fields: [(String, JSONValue)] = [("status", .int(status)), ("error", .string(error))]
            if let current {
                fields += [("etag", current.etag.map { .string($0) } ?? .null), ("current", .document(current.document))]
            }
            output.result(current.map { pretty($0.document) } ?? "", fields)
            return SyncCommand.notAllStored
        }
    }

    /// Merges the members in `file`, edited at `editedAt`, per field
    /// (`patchSettings(fields:editedAt:)`) and prints what the box holds
    /// then. A member whose box value won (edited there later) is named on
    /// stderr (`kept` with `--json`) and the exit status is 1.
    static func merge(_ client: BoxClient, file: String, editedAt: Date, _ output: inout Output) async throws -> Int32 {
        let merged = try await client.patchSettings(fields: try read(file), editedAt: editedAt)
        if !merged.kept.isEmpty, !output.json {
            output.error("kept on the box, edited there later: \(merged.kept.joined(separator: ", "))")
        }
        if !output.json, let etag = merged.settings.etag { output.error("ETag: \(etag)") }
        output.result(pretty(merged.settings.document), [
            ("status", .string("merged")), ("etag", merged.settings.etag.map { .string($0) } ?? .null),
            ("kept", .array(merged.kept.map { .string($0) })), ("document", .document(merged.settings.document)),
        ])
        return merged.kept.isEmpty ? SyncCommand.done : SyncCommand.notAllStored
    }

    /// The JSON object in `file`.
    private static func read(_ file: String) throws -> JSONText {
        let folder = Folder(path: file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : ".")
        let name = file.contains("/") ? String(file[file.index(after: file.lastIndex(of: "/")!)...]) : file
        return try JSONText(validating: try folder.read(name))
    }

    private static func show(_ settings: BoxSettings, status: String, _ output: inout Output) {
        if !output.json, let etag = settings.etag { output.error("ETag: \(etag)") }
        output.result(pretty(settings.document),
                      [("status", .string(status)), ("etag", settings.etag.map { .string($0) } ?? .null),
                       ("document", .document(settings.document))])
    }

    private static func pretty(_ document: JSONText) -> String {
        String(decoding: JSONPrinter.pretty(.document(document)), as: UTF8.self)
    }
}
