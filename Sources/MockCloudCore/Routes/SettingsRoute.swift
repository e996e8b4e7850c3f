/// What `/user/settings` refuses, beyond the common request errors.
package enum SettingsError: HTTPResponseError {
    case nothingStored
    /// `If-Match` / `If-None-Match` failed; `current` is what is stored, if anything.
    case preconditionFailed(reason: String, current: StoredSettings?)
    /// The incoming `updatedAt` is older than the stored one.
    case olderThanStored(incoming: String, stored: String, current: StoredSettings)
    /// The stored file is not JSON (edited or damaged by hand).
    case storedDocumentUnreadable(file: String)
    /// The stored file is JSON but not an object, so nothing can be merged into it.
    case storedDocumentNotAnObject(file: String)
    case mergePatchNotObject
    /// Python's indented layout of a deeply nested body can be many times its size.
    case storedFormTooLarge(size: Int, limit: Int)

    package var status: Int {
        switch self {
        case .nothingStored: return 404
        case .preconditionFailed: return 412
        case .olderThanStored: return 409
        case .storedDocumentUnreadable, .storedDocumentNotAnObject: return 500
        case .mergePatchNotObject: return 400
        case .storedFormTooLarge: return 413
        }
    }

    package var message: String {
        switch self {
        case .nothingStored: return "no settings stored for this user"
        case .preconditionFailed(let reason, _): return "precondition failed: \(reason)"
        case .olderThanStored(let incoming, let stored, _):
            return "updatedAt \(incoming) is older than the stored updatedAt \(stored); nothing was written"
        case .storedDocumentUnreadable: return "the stored settings for this user are not valid JSON"
        case .storedDocumentNotAnObject: return "the stored settings for this user are not a JSON object; PUT a new document"
        case .mergePatchNotObject: return "merge patch must be a JSON object"
        case .storedFormTooLarge(let size, let limit):
            return "stored in the Python layout (two-space indent) this document would take \(size) bytes, over the \(limit)-byte limit; nest it less deeply"
        }
    }

    package var extraMembers: [JSONMember] {
        switch self {
        case .preconditionFailed(_, let current?), .olderThanStored(_, _, let current):
            return current.document.map { [JSONMember("current", $0)] } ?? []
        default: return []
        }
    }

    package var extraHeaders: [(String, String)] {
        switch self {
        case .preconditionFailed(_, let current?), .olderThanStored(_, _, let current):
            return [("ETag", current.etag)]
        default: return []
        }
    }

    package var logDetail: String? {
        switch self {
        case .storedDocumentUnreadable(let file): return "\(file) is not valid JSON; not served"
        case .storedDocumentNotAnObject(let file): return "\(file) is not a JSON object; cannot be patched"
        default: return nil
        }
    }
}

/// A settings file as read from disk: its bytes, tag and (when it parses) document.
package struct StoredSettings: Sendable {
    package let bytes: [UInt8]
    package let etag: String
    /// `nil` when the file is not JSON.
    package let document: JSONValue?

    init(bytes: [UInt8]) {
        self.bytes = bytes
        etag = EntityTag.of(bytes)
        // Files written by the Python service may hold NaN or Infinity.
        document = try? JSONParser.parse(bytes, maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true)
    }

    /// The stored `updatedAt` as an instant, with its text.
    var updatedAt: (text: String, instant: Timestamp.Micros)? {
        SettingsRoute.updatedAt(of: document)
    }
}

/// `/user/settings`: GET, HEAD, PUT, PATCH (RFC 7396), DELETE of one JSON
/// document per `X-User-Key`, drop-in for the Python mock cloud's route, with
/// strong ETags, RFC 7232 conditions and last-writer-wins on `updatedAt`.
package struct SettingsRoute: Sendable {
    /// The path this route serves.
    package static let path = "/user/settings"
    /// The largest body accepted: 1 MiB (the limit itself is accepted).
    package static let bodyLimit = 1 << 20
    /// The methods served, in the order `Allow` lists them.
    package static let methods = ["GET", "HEAD", "PUT", "PATCH", "DELETE"]
    /// The largest stored file: the indented layout of a 1 MiB body nested 63
    /// levels deep would otherwise take 64 MiB of disk.
    package static let storedSizeLimit = 8 << 20
    /// The `Content-Type` a PATCH must carry.
    package static let mergePatchType = "application/merge-patch+json"

    let store: SettingsStore
    let clock: @Sendable () -> Timestamp.Micros

    /// - Parameters:
    ///   - dataRoot: the data directory.
    ///   - integrity: signing of stored documents (off by default).
    ///   - clock: the source of `serverReceivedAt`; tests pass a fixed one.
    package init(
        dataRoot: String, integrity: Integrity = .off,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now
    ) {
        store = SettingsStore(root: dataRoot, integrity: integrity)
        self.clock = clock
    }

    /// The route as the programs run it, configured from the environment.
    package init(config: ServiceConfig) {
        self.init(dataRoot: config.dataRoot, integrity: config.integrity)
    }

    /// Answers one request.
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        guard request.path == Self.path else { throw RequestError.notFound }
        guard Self.methods.contains(request.method) else {
            throw RequestError.methodNotAllowed(method: request.method, path: Self.path, allowed: Self.methods)
        }
        let key = try request.userKey()
        switch request.method {
        case "GET", "HEAD": return try get(key, request)
        case "PUT": return try put(key, request)
        case "PATCH": return try patch(key, request)
        default: return try delete(key, request)
        }
    }

    private func get(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        guard let bytes = try store.read(key) else { throw SettingsError.nothingStored }
        let etag = EntityTag.of(bytes)
        if !EntityTag.ifNoneMatchPasses(request.header("If-None-Match"), current: etag) {
            return CGIResponse(status: 304, header: "ETag", etag)
        }
        // A file as the printers write it is answered without parsing it.
        if let body = JSONParser.compactForm(ofStored: bytes) {
            return CGIResponse(status: 200, header: "ETag", etag, body: body)
        }
        let stored = StoredSettings(bytes: bytes)
        guard let document = stored.document else {
            throw SettingsError.storedDocumentUnreadable(file: store.path(for: key))
        }
        return .json(200, document, header: "ETag", stored.etag)
    }

    private func put(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        // An empty body is `{}`, as in the Python service.
        let incoming = request.body.isEmpty ? JSONObject() : try Self.parseObject(request.body, or: RequestError.notAnObject)
        return try write(key, request) { _ in incoming }
    }

    private func patch(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        guard request.mediaType == Self.mergePatchType else {
            throw RequestError.unsupportedMediaType(expected: Self.mergePatchType, received: request.contentType)
        }
        let patch = try Self.parseObject(request.body, or: SettingsError.mergePatchNotObject)
        return try write(key, request) { current in
            guard let current else { throw SettingsError.nothingStored }
            let file = store.path(for: key)
            guard let stored = current.document else { throw SettingsError.storedDocumentUnreadable(file: file) }
            guard let document = stored.objectValue else { throw SettingsError.storedDocumentNotAnObject(file: file) }
            return JSONValue.object(document).merging(patch: .object(patch)).objectValue ?? JSONObject()
        }
    }

    private func delete(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        try store.update(key) { bytes in
            let current = bytes.map(StoredSettings.init)
            try checkConditions(request, current)
            guard current != nil else { throw SettingsError.nothingStored }
            return (.delete, CGIResponse(status: 204))
        }
    }

    /// The common path of PUT and PATCH, under the key's lock: conditions,
    /// last-writer-wins, `serverReceivedAt`, then the atomic write.
    private func write(
        _ key: UserKey, _ request: CGIRequest, makeDocument: (StoredSettings?) throws -> JSONObject
    ) throws -> CGIResponse {
        try store.update(key) { bytes in
            let current = bytes.map(StoredSettings.init)
            try checkConditions(request, current)
            var document = try makeDocument(current)
            if let current, let stored = current.updatedAt,
                let incoming = Self.updatedAt(of: .object(document)), incoming.instant < stored.instant
            {
                throw SettingsError.olderThanStored(incoming: incoming.text, stored: stored.text, current: current)
            }
            document["serverReceivedAt"] = .string(Timestamp.format(clock()))
            let value = JSONValue.object(document)
            let newBytes = JSONPrinter.pretty(value)
            if newBytes.count > Self.storedSizeLimit {
                throw SettingsError.storedFormTooLarge(size: newBytes.count, limit: Self.storedSizeLimit)
            }
            let response = CGIResponse.json(200, value, header: "ETag", EntityTag.of(newBytes))
            return (.write(newBytes), response)
        }
    }

    private func checkConditions(_ request: CGIRequest, _ current: StoredSettings?) throws {
        if !EntityTag.ifMatchPasses(request.header("If-Match"), current: current?.etag) {
            let reason = current == nil
                ? "If-Match given but no settings are stored for this user"
                : "If-Match does not match the stored settings' ETag"
            throw SettingsError.preconditionFailed(reason: reason, current: current)
        }
        if !EntityTag.ifNoneMatchPasses(request.header("If-None-Match"), current: current?.etag) {
            throw SettingsError.preconditionFailed(
                reason: "If-None-Match matches the stored settings", current: current)
        }
    }

    /// Parses a body that must be a JSON object; `notObject` is thrown otherwise.
    static func parseObject(_ body: [UInt8], or notObject: any Error) throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw RequestError.invalidJSON(error)
        }
        guard let object = value.objectValue else { throw notObject }
        return object
    }

    /// A document's `updatedAt` when it is a string in an accepted form.
    static func updatedAt(of document: JSONValue?) -> (text: String, instant: Timestamp.Micros)? {
        guard let text = document?.objectValue?["updatedAt"]?.stringValue,
            let instant = Timestamp.parse(text)
        else { return nil }
        return (text, instant)
    }
}
