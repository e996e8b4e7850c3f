import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// `/user/settings`: GET, HEAD, PUT, PATCH (RFC 7396), DELETE of one JSON
/// document per `X-User-Key`, drop-in for the Python mock cloud's route, with
/// strong ETags, RFC 7232 conditions and last-writer-wins on `updatedAt`;
/// with `X-Merge: fields`, a PATCH merges per member and a GET answers the
/// member times (docs/API.md §3).
package struct SettingsRoute: Sendable {
    /// The largest body accepted: 1 MiB (the limit itself is accepted).
    package static let bodyLimit = WireLimits.settingsBodyBytes

    let store: SettingsStore
    let waiting: WaitHost
    /// Where a line for the server log goes.
    let log: @Sendable (String) -> Void

    /// - Parameters:
    ///   - dataRoot: the data directory.
    ///   - integrity: signing of stored documents (off by default).
    ///   - minimumFreeBytes: the free-space floor below which writes are refused.
    ///   - clock: the source of `serverReceivedAt`; tests pass a fixed one.
    ///   - waiting: what a `?wait=` read needs of the process (none in a test).
    ///   - log: a line for the server log (a damaged member-times file); stderr by default.
    package init(
        dataRoot: String, integrity: Integrity = .off, minimumFreeBytes: Int64 = FreeSpaceError.defaultFloor,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now, waiting: WaitHost = .none,
        log: @escaping @Sendable (String) -> Void = { CGIProgram.log("user-settings", $0) }
    ) {
        store = SettingsStore(root: dataRoot, integrity: integrity, minimumFreeBytes: minimumFreeBytes, clock: clock)
        self.waiting = waiting
        self.log = log
    }

    /// The route as the programs run it, configured from the environment.
    package init(config: ServiceConfig) {
        self.init(dataRoot: config.dataRoot, integrity: config.integrity, minimumFreeBytes: config.minimumFreeBytes,
                  waiting: .program(perAddress: config.waitsPerAddress))
    }

    /// Answers one request: parse, call the store, map its answer.
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        guard request.path == Endpoint.settings.path else { throw RequestError.notFound }
        // The method is checked before the query and the user key: a 405
        // names the methods.
        switch request.method {
        case .get, .head:
            let wait = try QueryString(request, takes: QueryParameters.settings).waitSeconds()
            let key = try request.userKey()
            let ifNoneMatch = request.tagCondition(HTTPHeader.ifNoneMatch)
            if try Self.mergesFields(request) { return try getWithTimes(key, ifNoneMatch: ifNoneMatch) }
            guard let wait, let ifNoneMatch else { return try get(key, ifNoneMatch: ifNoneMatch) }
            return try get(key, ifNoneMatch: ifNoneMatch, waitingSeconds: wait, from: request.remoteAddress)
        case .put, .patch, .delete:
            _ = try QueryString(request, takes: QueryParameters.none)
            return try change(request)
        case .post, .other:
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: Endpoint.settings.methods)
        }
    }

    /// PUT, PATCH and DELETE.
    private func change(_ request: CGIRequest) throws -> CGIResponse {
        switch request.method {
        case .put:
            let key = try request.userKey()
            try Self.refuseMerge(request)
            // An empty body is `{}`, as in the Python service.
            let document = request.body.isEmpty ? JSONObject() : try request.jsonObjectBody(or: RequestError.notAnObject)
            return Self.answer(try store.replace(key, with: document, given: request.preconditions))
        case .patch:
            let key = try request.userKey()
            guard request.mediaType == HeaderValue.mergePatch else {
                throw RequestError.unsupportedMediaType(expected: HeaderValue.mergePatch, received: request.contentType)
            }
            let patch = try request.jsonObjectBody(or: RequestError.mergePatchNotObject)
            guard try Self.mergesFields(request) else {
                return Self.answer(try store.merge(key, patch: patch, given: request.preconditions))
            }
            let edit = try FieldPatch(patch, device: try InboxRoute.source(request))
            let merged = try store.mergeFields(key, edit, given: request.preconditions)
            if let problem = merged.problem { log(problem) }
            // `X-Merge: fields` says the box merged per field (an older one ignores the header).
            var headers: [CGIResponse.Header] = [
                .init(HTTPHeader.etag.name, merged.stored.etag.text), .init(HTTPHeader.merge.name, HeaderValue.mergeFields),
            ]
            if let kept = MergeKept.header(merged.kept) { headers.append(.init(HTTPHeader.mergeKept.name, kept)) }
            return .json(.ok, merged.stored.document ?? .object(JSONObject()), headers: headers)
        case .delete:
            let key = try request.userKey()
            try Self.refuseMerge(request)
            try store.remove(key, given: request.preconditions)
            return CGIResponse(status: .noContent)
        case .get, .head, .post, .other:
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: Endpoint.settings.methods)
        }
    }

    private func get(_ key: UserKey, ifNoneMatch: TagCondition?) throws -> CGIResponse {
        try answer(try store.read(key), key, ifNoneMatch: ifNoneMatch)
    }

    /// A GET with `If-None-Match` and `wait`: held while its answer would be
    /// the same (304 for a named tag; 404 for nothing stored, to a client
    /// that holds no document: `*` or `""`), and answered as soon as another
    /// write makes it news: a document whose tag is not named (200), one
    /// where nothing was stored (200, whatever the tags), or a deletion
    /// (404). A client that names a document deleted before its wait began
    /// hears 404 at once: the deletion is its news. When the wait ends, the
    /// ordinary answer.
    private func get(
        _ key: UserKey, ifNoneMatch: TagCondition, waitingSeconds seconds: Int, from address: String?
    ) throws -> CGIResponse {
        let first = try store.read(key)
        let isNews = { (bytes: [UInt8]?) -> Bool in
            guard let bytes else { return first != nil }
            return first == nil || !ifNoneMatch.names(EntityTag(of: bytes))
        }
        if isNews(first) || (first == nil && ifNoneMatch.namesADocument) {
            return try answer(first, key, ifNoneMatch: ifNoneMatch)
        }
        let bytes = try store.read(key, after: first, waiting: waiting.limit(seconds: seconds, address: address),
                                   until: isNews)
        // A document where there was none is news even to `If-None-Match: *`.
        return try answer(bytes, key, ifNoneMatch: first == nil ? nil : ifNoneMatch)
    }

    /// 404, 304 or 200 for what a read found.
    private func answer(_ stored: [UInt8]?, _ key: UserKey, ifNoneMatch: TagCondition?) throws -> CGIResponse {
        guard let bytes = stored else { throw SettingsError.nothingStored }
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

    /// GET with `X-Merge: fields`: `{"document": …, "times": {…}}` with the
    /// document's tag (its `If-Match` for the next write) and `X-Merge:
    /// fields`, which tells this answer from an older box's plain one (an
    /// older box ignores the request header). A times file that
    /// was not usable is logged; the answer then has whole-document times.
    private func getWithTimes(_ key: UserKey, ifNoneMatch: TagCondition?) throws -> CGIResponse {
        guard let timed = try store.readWithTimes(key) else { throw SettingsError.nothingStored }
        if let problem = timed.problem { log(problem) }
        let etag = timed.stored.etag
        if ifNoneMatch?.names(etag) == true {
            return CGIResponse(status: .notModified, header: HTTPHeader.etag.name, etag.text)
        }
        guard let document = timed.stored.document else {
            throw SettingsError.storedDocumentUnreadable(file: store.path(for: key))
        }
        return .json(.ok, TimedDocument(document: document, times: timed.times).json, headers: [
            .init(HTTPHeader.etag.name, etag.text), .init(HTTPHeader.merge.name, HeaderValue.mergeFields),
        ])
    }

    /// True for `X-Merge: fields`, false without `X-Merge`; any other value is a 400.
    private static func mergesFields(_ request: CGIRequest) throws(RequestError) -> Bool {
        guard let value = request.header(HTTPHeader.merge) else { return false }
        guard Substring(value).trimmingHeaderSpace().lowercased() == HeaderValue.mergeFields else { throw .unknownMerge(value) }
        return true
    }

    /// A PUT or DELETE with `X-Merge` is a 400: it would not do what it asks.
    private static func refuseMerge(_ request: CGIRequest) throws(RequestError) {
        if request.header(HTTPHeader.merge) != nil { throw .mergeNotForMethod(request.method) }
    }

    /// 200 with the stored document and its tag.
    private static func answer(_ stored: StoredSettings) -> CGIResponse {
        .json(.ok, stored.document ?? .object(JSONObject()), header: HTTPHeader.etag.name, stored.etag.text)
    }
}
