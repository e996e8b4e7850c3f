import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// `/user/settings`: GET, HEAD, PUT, PATCH (RFC 7396), DELETE of one JSON
/// document per `X-User-Key`, drop-in for the Python mock cloud's route, with
/// strong ETags, RFC 7232 conditions and last-writer-wins on `updatedAt`.
package struct SettingsRoute: Sendable {
    /// The path this route serves.
    package static let path = "/user/settings"
    /// The largest body accepted: 1 MiB (the limit itself is accepted).
    package static let bodyLimit = WireLimits.settingsBodyBytes
    /// The methods served, in the order `Allow` lists them.
    package static let methods: [HTTPMethod] = [.get, .head, .put, .patch, .delete]
    /// The `Content-Type` a PATCH must carry.
    package static let mergePatchType = "application/merge-patch+json"

    let store: SettingsStore

    /// - Parameters:
    ///   - dataRoot: the data directory.
    ///   - integrity: signing of stored documents (off by default).
    ///   - minimumFreeBytes: the free-space floor below which writes are refused.
    ///   - clock: the source of `serverReceivedAt`; tests pass a fixed one.
    package init(
        dataRoot: String, integrity: Integrity = .off, minimumFreeBytes: Int64 = FreeSpaceError.defaultFloor,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now
    ) {
        store = SettingsStore(root: dataRoot, integrity: integrity, minimumFreeBytes: minimumFreeBytes, clock: clock)
    }

    /// The route as the programs run it, configured from the environment.
    package init(config: ServiceConfig) {
        self.init(dataRoot: config.dataRoot, integrity: config.integrity, minimumFreeBytes: config.minimumFreeBytes)
    }

    /// Answers one request: parse, call the store, map its answer.
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        guard request.path == Self.path else { throw RequestError.notFound }
        // The method is checked before the user key: a 405 names the methods.
        switch request.method {
        case .get, .head:
            return try get(try request.userKey(), ifNoneMatch: request.tagCondition(HTTPHeader.ifNoneMatch))
        case .put:
            let key = try request.userKey()
            // An empty body is `{}`, as in the Python service.
            let document = request.body.isEmpty ? JSONObject() : try request.jsonObjectBody(or: RequestError.notAnObject)
            return Self.answer(try store.replace(key, with: document, given: request.preconditions))
        case .patch:
            let key = try request.userKey()
            guard request.mediaType == Self.mergePatchType else {
                throw RequestError.unsupportedMediaType(expected: Self.mergePatchType, received: request.contentType)
            }
            let patch = try request.jsonObjectBody(or: RequestError.mergePatchNotObject)
            return Self.answer(try store.merge(key, patch: patch, given: request.preconditions))
        case .delete:
            try store.remove(try request.userKey(), given: request.preconditions)
            return CGIResponse(status: .noContent)
        case .post, .other:
            throw RequestError.methodNotAllowed(method: request.method, path: Self.path, allowed: Self.methods)
        }
    }

    private func get(_ key: UserKey, ifNoneMatch: TagCondition?) throws -> CGIResponse {
        guard let bytes = try store.read(key) else { throw SettingsError.nothingStored }
        let etag = EntityTag(of: bytes)
        if ifNoneMatch?.names(etag) == true {
            return CGIResponse(status: .notModified, header: HTTPHeader.etag.name, etag.text)
        }
        // A file as the printers write it is answered without parsing it.
        if let body = JSONParser.compactForm(ofStored: bytes) {
            return CGIResponse(status: .ok, header: HTTPHeader.etag.name, etag.text, body: body)
        }
        let stored = StoredSettings(bytes: bytes)
        guard let document = stored.document else {
            throw SettingsError.storedDocumentUnreadable(file: store.path(for: key))
        }
        return .json(.ok, document, header: HTTPHeader.etag.name, stored.etag.text)
    }

    /// 200 with the stored document and its tag.
    private static func answer(_ stored: StoredSettings) -> CGIResponse {
        .json(.ok, stored.document ?? .object(JSONObject()), header: HTTPHeader.etag.name, stored.etag.text)
    }
}
