import MockCloudJSON
import MockCloudStore
import MockCloudSystem

/// `/user/settings`: GET, HEAD, PUT, PATCH (RFC 7396), DELETE of one JSON
/// document per `X-User-Key`, drop-in for the Python mock cloud's route, with
/// strong ETags, RFC 7232 conditions and last-writer-wins on `updatedAt`.
package struct SettingsRoute: Sendable {
    /// The path this route serves.
    package static let path = "/user/settings"
    /// The largest body accepted: 1 MiB (the limit itself is accepted).
    package static let bodyLimit = 1 << 20
    /// The methods served, in the order `Allow` lists them.
    package static let methods: [HTTPMethod] = [.get, .head, .put, .patch, .delete]
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
    ///   - minimumFreeBytes: the free-space floor below which writes are refused.
    package init(
        dataRoot: String, integrity: Integrity = .off, minimumFreeBytes: Int64 = FreeSpaceError.defaultFloor,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now
    ) {
        store = SettingsStore(root: dataRoot, integrity: integrity, minimumFreeBytes: minimumFreeBytes)
        self.clock = clock
    }

    /// The route as the programs run it, configured from the environment.
    package init(config: ServiceConfig) {
        self.init(dataRoot: config.dataRoot, integrity: config.integrity, minimumFreeBytes: config.minimumFreeBytes)
    }

    /// Answers one request.
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        guard request.path == Self.path else { throw RequestError.notFound }
        // The method is checked before the user key: a 405 names the methods.
        switch request.method {
        case .get, .head: return try get(try request.userKey(), request)
        case .put: return try put(try request.userKey(), request)
        case .patch: return try patch(try request.userKey(), request)
        case .delete: return try delete(try request.userKey(), request)
        case .post, .other:
            throw RequestError.methodNotAllowed(method: request.method, path: Self.path, allowed: Self.methods)
        }
    }

    private func get(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        guard let bytes = try store.read(key) else { throw SettingsError.nothingStored }
        let etag = EntityTag.of(bytes)
        if !EntityTag.ifNoneMatchPasses(request.header("If-None-Match"), current: etag) {
            return CGIResponse(status: .notModified, header: "ETag", etag)
        }
        // A file as the printers write it is answered without parsing it.
        if let body = JSONParser.compactForm(ofStored: bytes) {
            return CGIResponse(status: .ok, header: "ETag", etag, body: body)
        }
        let stored = StoredSettings(bytes: bytes)
        guard let document = stored.document else {
            throw SettingsError.storedDocumentUnreadable(file: store.path(for: key))
        }
        return .json(.ok, document, header: "ETag", stored.etag)
    }

    private func put(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        // An empty body is `{}`, as in the Python service.
        let incoming = request.body.isEmpty ? JSONObject() : try request.jsonObjectBody(or: RequestError.notAnObject)
        return try write(key, request) { _ in incoming }
    }

    private func patch(_ key: UserKey, _ request: CGIRequest) throws -> CGIResponse {
        guard request.mediaType == Self.mergePatchType else {
            throw RequestError.unsupportedMediaType(expected: Self.mergePatchType, received: request.contentType)
        }
        let patch = try request.jsonObjectBody(or: SettingsError.mergePatchNotObject)
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
            return (.delete, CGIResponse(status: .noContent))
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
            let response = CGIResponse.json(.ok, value, header: "ETag", EntityTag.of(newBytes))
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

    /// A document's `updatedAt` when it is a string in an accepted form.
    static func updatedAt(of document: JSONValue?) -> (text: String, instant: Timestamp.Micros)? {
        guard let text = document?.objectValue?["updatedAt"]?.stringValue,
            let instant = Timestamp.parse(text)
        else { return nil }
        return (text, instant)
    }
}
