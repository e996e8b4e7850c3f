import MockCloudConfig
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// `/inbox` and `/inbox/<id>`: idempotent messages by sync id + version and
/// an anchored change feed (docs/API.md §4).
package struct InboxRoute: Sendable {
    /// The largest message body: 256 KiB (the limit itself is accepted).
    package static let bodyLimit = WireLimits.messageBodyBytes
    /// Feed page sizes.
    package static let limits = WireLimits.feedPageSizes
    package static let defaultLimit = WireLimits.feedPageDefault

    let dataRoot: String
    let settings: InboxSettings
    let integrity: Integrity
    let clock: @Sendable () -> Timestamp.Micros
    /// What a `?wait=` feed read needs of the process (none in a test).
    let waiting: WaitHost

    package init(
        dataRoot: String, settings: InboxSettings = InboxSettings(), integrity: Integrity = .off,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now, waiting: WaitHost = .none
    ) {
        self.dataRoot = dataRoot
        self.settings = settings
        self.integrity = integrity
        self.clock = clock
        self.waiting = waiting
    }

    /// The route as the program runs it, configured from the environment.
    package init(config: ServiceConfig) throws {
        // Read first, so that a throw leaves no half-copied integrity to
        // destroy (that destroy built Optional metadata at run time).
        let settings = try config.inboxSettings()
        self.init(dataRoot: config.dataRoot, settings: settings, integrity: config.integrity,
                  waiting: .program(perAddress: config.waitsPerAddress))
    }

    /// Answers one request and then runs its upkeep, as a test or a tool
    /// wants it (the program answers first: `respond(to:afterAnswer:)`).
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        var upkeep = Upkeep.none
        defer { try? upkeep.run() }
        return try respond(to: request, afterAnswer: &upkeep)
    }

    /// Answers one request. The method is checked before the query and the
    /// user key (a 405 names the methods), the user key before the message id. A write
    /// leaves its inbox's upkeep (compaction, tidying) in `afterAnswer`.
    package func respond(to request: CGIRequest, afterAnswer: inout Upkeep) throws -> CGIResponse {
        if request.path == Endpoint.bulk.path { return try bulk(request, afterAnswer: &afterAnswer) }
        // The program reads bodies up to the bulk limit; every other request
        // keeps a single message's.
        if request.body.count > Self.bodyLimit { throw RequestError.bodyTooLarge(limit: Self.bodyLimit) }
        let messagePrefix = Endpoint.message.path
        guard request.path != Endpoint.inbox.path else {
            switch request.method {
            case .get, .head:
                let query = try QueryString(request, takes: QueryParameters.feed)
                return try feed(query, try store(for: request), from: request.remoteAddress)
            case .post:
                _ = try QueryString(request, takes: QueryParameters.none)
                return try post(request, try store(for: request, afterAnswer: &afterAnswer))
            case .put, .patch, .delete, .other:
                throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: Endpoint.inbox.methods)
            }
        }
        guard request.path.hasPrefix(messagePrefix) else { throw RequestError.notFound }
        let idText = String(request.path.dropFirst(messagePrefix.count))
        switch request.method {
        case .get, .head, .put, .delete: _ = try QueryString(request, takes: QueryParameters.none)
        case .post, .patch, .other: break
        }
        switch request.method {
        case .get, .head:
            let store = try store(for: request)
            guard let envelope = try store.read(try Self.messageID(idText)), !envelope.envelope.isTombstone else {
                throw InboxError.noMessage
            }
            return CGIResponse(status: .ok, body: envelope.bytes)
        case .put:
            let store = try store(for: request, afterAnswer: &afterAnswer)
            return try put(try Self.messageID(idText), request, store)
        case .delete:
            let store = try store(for: request, afterAnswer: &afterAnswer)
            guard try store.delete(try Self.messageID(idText), source: try Self.source(request)) else {
                throw InboxError.noMessage
            }
            return CGIResponse(status: .noContent)
        case .post, .patch, .other:
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: Endpoint.message.methods)
        }
    }

    /// The requesting key's inbox, its folders checked (no planted links).
    private func store(for request: CGIRequest) throws -> InboxStore {
        try store(for: try request.userKey())
    }

    /// The inbox a write changes, with its upkeep left for after the answer
    /// (whether the write succeeds or not).
    func store(for request: CGIRequest, afterAnswer: inout Upkeep) throws -> InboxStore {
        let store = try store(for: try request.userKey())
        afterAnswer = Upkeep { try store.upkeep(onlyIfDue: true) }
        return store
    }

    private func store(for key: UserKey) throws -> InboxStore {
        let store = InboxStore(root: dataRoot, key: key, settings: settings, integrity: integrity, clock: clock)
        try store.checkDirectories()
        return store
    }

    private static func messageID(_ text: String) throws -> MessageID {
        guard let id = MessageID(text) else { throw InboxRequestError.invalidMessageID }
        return id
    }

    private func put(_ id: MessageID, _ request: CGIRequest, _ store: InboxStore) throws -> CGIResponse {
        let write = try WriteFields(request)
        switch try store.put(id, version: write.version, source: write.source, body: write.body) {
        case .created(let envelope): return Self.created(envelope)
        case .replaced(let envelope), .unchanged(let envelope): return CGIResponse(status: .ok, body: envelope.bytes)
        }
    }

    private func post(_ request: CGIRequest, _ store: InboxStore) throws -> CGIResponse {
        let write = try WriteFields(request)
        let id = MessageID.random()
        let outcome: InboxStore.PutOutcome
        do {
            outcome = try store.put(id, version: write.version, source: write.source, body: write.body)
        } catch let error as StorageError where error.phase != .writing && error.phase != .reading {
            // Stored, perhaps: a second POST would store a second copy.
            throw PostedUnderID(cause: error, id: id)
        }
        guard case .created(let envelope) = outcome else {
            throw ServerError(message: "a fresh message id was already taken; try again")
        }
        return Self.created(envelope)
    }

    private func feed(_ query: QueryString, _ store: InboxStore, from address: String?) throws -> CGIResponse {
        var anchor: Anchor?
        if let text = query[QueryParameters.anchor], !text.isEmpty {
            guard let parsed = Anchor(text) else { throw InboxError.malformedAnchor }
            anchor = parsed
        }
        var limit = Self.defaultLimit
        if let text = query[QueryParameters.limit] {
            guard text.utf8.count <= 4, let value = Int(text), text.utf8.allSatisfy(ASCII.isDigit),
                Self.limits.contains(value)
            else { throw InboxRequestError.invalidLimit(text) }
            limit = value
        }
        var excluded: DeviceID?
        if let text = query[QueryParameters.excludeSource] {
            guard let device = DeviceID(text) else { throw InboxRequestError.invalidExcludeSource }
            excluded = device
        }
        guard let seconds = try query.waitSeconds() else {
            return CGIResponse(status: .ok, body: try store.changes(after: anchor, limit: limit, excludingSource: excluded).bytes)
        }
        let page = try store.changes(after: anchor, limit: limit, excludingSource: excluded,
                                     waiting: waiting.limit(seconds: seconds, address: address))
        return CGIResponse(status: .ok, body: page.bytes)
    }

    private static func created(_ stored: StoredEnvelope) -> CGIResponse {
        CGIResponse(status: .created, header: HTTPHeader.location.name, Endpoint.message(stored.envelope.id), body: stored.bytes)
    }

    /// What a PUT or POST of one message carries: `X-Sync-Version` (default
    /// 0), `X-Device-Id` and the body.
    private struct WriteFields {
        var version: Int64 = 0
        var source: DeviceID?
        var body: JSONValue

        init(_ request: CGIRequest) throws {
            if let text = request.header(HTTPHeader.syncVersion) {
                guard let value = SyncVersion.parse(text) else { throw InboxRequestError.invalidSyncVersion(text) }
                version = value
            }
            source = try InboxRoute.source(request)
            body = .object(try request.jsonObjectBody(or: RequestError.notAnObject))
        }
    }

    /// `X-Device-Id`, the writer a message's `source` names; `nil` when absent.
    static func source(_ request: CGIRequest) throws -> DeviceID? {
        guard let text = request.header(HTTPHeader.deviceID) else { return nil }
        guard let device = DeviceID(text) else { throw InboxRequestError.invalidDeviceID }
        return device
    }
}
