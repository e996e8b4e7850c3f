/// What is wrong with an inbox request's own fields.
package enum InboxRequestError: HTTPResponseError, Equatable {
    case invalidMessageID
    case invalidSyncVersion(String)
    case invalidDeviceID
    case malformedQuery
    case invalidLimit(String)
    case invalidExcludeSource

    package var status: Int { 400 }

    package var message: String {
        switch self {
        case .invalidMessageID: return "invalid message id: must match ^[A-Za-z0-9._:-]{1,200}$"
        case .invalidSyncVersion(let text):
            return "invalid X-Sync-Version \(String(reflecting: text)): must be a non-negative integer"
        case .invalidDeviceID: return "invalid X-Device-Id shape"
        case .malformedQuery: return "malformed query string"
        case .invalidLimit(let text): return "invalid limit \(String(reflecting: text)): must be an integer from 1 to 1000"
        case .invalidExcludeSource: return "invalid exclude-source shape"
        }
    }
}

/// `/inbox` and `/inbox/<id>`: idempotent messages by sync id + version and
/// an anchored change feed (CONTRACT section 4).
package struct InboxRoute: Sendable {
    /// The largest message body: 256 KiB (the limit itself is accepted).
    package static let bodyLimit = 256 << 10
    package static let collectionPath = "/inbox"
    static let collectionMethods = ["GET", "HEAD", "POST"]
    static let messageMethods = ["GET", "HEAD", "PUT", "DELETE"]
    /// Feed page sizes.
    package static let limits = 1...1000
    package static let defaultLimit = 100

    let dataRoot: String
    let settings: InboxSettings
    let integrity: Integrity
    let clock: @Sendable () -> Timestamp.Micros

    package init(
        dataRoot: String, settings: InboxSettings = InboxSettings(), integrity: Integrity = .off,
        clock: @escaping @Sendable () -> Timestamp.Micros = Timestamp.now
    ) {
        self.dataRoot = dataRoot
        self.settings = settings
        self.integrity = integrity
        self.clock = clock
    }

    /// The route as the program runs it, configured from the environment.
    package init(config: ServiceConfig, environment: CGIEnvironment) throws {
        // Read first, so that a throw leaves no half-copied integrity to
        // destroy (that destroy built Optional metadata at run time).
        let settings = try InboxSettings(environment: environment)
        self.init(dataRoot: config.dataRoot, settings: settings, integrity: config.integrity)
    }

    /// Answers one request.
    package func respond(to request: CGIRequest) throws -> CGIResponse {
        let messagePrefix = Self.collectionPath + "/"
        let idText: String?
        if request.path == Self.collectionPath {
            idText = nil
        } else if request.path.hasPrefix(messagePrefix) {
            idText = String(request.path.dropFirst(messagePrefix.count))
        } else {
            throw RequestError.notFound
        }
        let allowed = idText == nil ? Self.collectionMethods : Self.messageMethods
        guard allowed.contains(request.method) else {
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: allowed)
        }
        let store = InboxStore(
            root: dataRoot, key: try request.userKey(), settings: settings, integrity: integrity, clock: clock)
        guard let idText else {
            return request.method == "POST" ? try post(request, store) : try feed(request, store)
        }
        guard let id = MessageID(idText) else { throw InboxRequestError.invalidMessageID }
        switch request.method {
        case "PUT": return try put(id, request, store)
        case "DELETE":
            guard try store.delete(id, source: try Self.source(request)) else { throw InboxError.noMessage }
            return CGIResponse(status: 204)
        default:
            guard let envelope = try store.load(id), !envelope.isTombstone else { throw InboxError.noMessage }
            return CGIResponse(status: 200, body: envelope.bytes)
        }
    }

    private func put(_ id: MessageID, _ request: CGIRequest, _ store: InboxStore) throws -> CGIResponse {
        let (version, source, body) = try Self.writeFields(request)
        switch try store.put(id, version: version, source: source, body: body) {
        case .created(let envelope): return Self.created(envelope)
        case .replaced(let envelope), .unchanged(let envelope): return CGIResponse(status: 200, body: envelope.bytes)
        }
    }

    private func post(_ request: CGIRequest, _ store: InboxStore) throws -> CGIResponse {
        let (version, source, body) = try Self.writeFields(request)
        let id = MessageID(Random.uuid())!
        guard case .created(let envelope) = try store.put(id, version: version, source: source, body: body) else {
            throw ServerError(message: "a fresh message id was already taken; try again")
        }
        return Self.created(envelope)
    }

    private func feed(_ request: CGIRequest, _ store: InboxStore) throws -> CGIResponse {
        guard let query = QueryString(request.query) else { throw InboxRequestError.malformedQuery }
        var anchor = Anchor.beginning
        if let text = query["anchor"], !text.isEmpty {
            guard let parsed = Anchor(text) else { throw InboxError.malformedAnchor }
            anchor = parsed
        }
        var limit = Self.defaultLimit
        if let text = query["limit"] {
            guard text.utf8.count <= 4, let value = Int(text), text.utf8.allSatisfy(ASCII.isDigit),
                Self.limits.contains(value)
            else { throw InboxRequestError.invalidLimit(text) }
            limit = value
        }
        var excluded: String?
        if let text = query["exclude-source"] {
            guard let device = DeviceID(text) else { throw InboxRequestError.invalidExcludeSource }
            excluded = device.rawValue
        }
        return CGIResponse(status: 200, body: try store.changes(after: anchor, limit: limit, excludingSource: excluded).bytes)
    }

    private static func created(_ envelope: Envelope) -> CGIResponse {
        CGIResponse(status: 201, header: "Location", "\(collectionPath)/\(envelope.id.rawValue)", body: envelope.bytes)
    }

    /// `X-Sync-Version` (default 0), `X-Device-Id` and the body of a write.
    private static func writeFields(_ request: CGIRequest) throws -> (Int64, String?, JSONValue) {
        var version: Int64 = 0
        if let text = request.header("X-Sync-Version") {
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy(ASCII.isDigit),
                let value = Int64(text)
            else { throw InboxRequestError.invalidSyncVersion(text) }
            version = value
        }
        let source = try source(request)
        let body = try SettingsRoute.parseObject(request.body, or: RequestError.notAnObject)
        return (version, source, .object(body))
    }

    private static func source(_ request: CGIRequest) throws -> String? {
        guard let text = request.header("X-Device-Id") else { return nil }
        guard let device = DeviceID(text) else { throw InboxRequestError.invalidDeviceID }
        return device.rawValue
    }
}
