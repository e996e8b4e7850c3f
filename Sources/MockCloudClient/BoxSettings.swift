import MockCloudJSON
import MockCloudWire

/// The user's settings document and its entity tag.
public struct BoxSettings: Sendable, Equatable {
    public var document: JSONText
    /// The `ETag` as the server sent it (possibly weak, `W/"…"`, when the
    /// answer was gzipped): send it back unchanged as `If-Match`.
    public var etag: String?

    public init(document: JSONText, etag: String?) {
        self.document = document
        self.etag = etag
    }
}

/// The condition a settings write names.
enum WriteCondition {
    /// `If-Match`: only over the stored document with this tag.
    case ifMatch(String)
    /// `If-None-Match`: only when no stored document has one of these tags (`*`: none is stored).
    case ifNoneMatch(String)
}

/// What a settings write did.
///
/// Frozen on purpose: a write is either stored or meets a condition that
/// does not hold (409, 412); every other answer throws a `ClientError`,
/// whose `code` is the extensible part.
@frozen
public enum SettingsWrite: Sendable, Equatable {
    /// 200: stored (`serverReceivedAt` set by the server).
    case written(BoxSettings)
    /// 409 (the document's `updatedAt` is older than the stored one) or 412
    /// (`If-Match` did not hold): nothing was written; `current` is the
    /// server's document (nil when nothing is stored), for the caller to
    /// merge or give up.
    case conflict(status: Int, error: String, current: BoxSettings?)
}

extension BoxClient {
    /// The stored settings; nil when none are stored (404).
    public func settings() async throws -> BoxSettings? {
        let response = try await exchange(TransportRequest(.get, Endpoint.settings.path), .safe)
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw Self.refusal(response) }
        return BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header(HTTPHeader.etag.name))
    }

    /// Replaces the document (`PUT`); last writer wins by `updatedAt`.
    /// With `ifMatch`, only if the stored document still has that tag.
    public func putSettings(_ document: JSONText, ifMatch: String? = nil) async throws -> SettingsWrite {
        try await writeSettings(.put, document, condition: ifMatch.map(WriteCondition.ifMatch))
    }

    /// Applies an RFC 7396 merge patch (`PATCH`): fields replace in place,
    /// `null` removes, nested objects merge.
    public func patchSettings(_ patch: JSONText, ifMatch: String? = nil) async throws -> SettingsWrite {
        try await writeSettings(.patch, patch, condition: ifMatch.map(WriteCondition.ifMatch))
    }

    /// A PUT or a merge patch gives the same result when sent twice, so a
    /// lost answer is retried. A conditional one is not sent blindly again
    /// (its first attempt may have changed the tag it names): when no answer
    /// says whether it was applied (a cut connection, a 5xx with `"changed":
    /// "maybe"` or `"yes"`), the settings are read back to settle it.
    func writeSettings(_ method: HTTPMethod, _ document: JSONText, condition: WriteCondition?) async throws -> SettingsWrite {
        var headers = [(name: HTTPHeader.contentType.name, value: method == .patch ? HeaderValue.mergePatch : HeaderValue.json)]
        var ifMatch: String?
        switch condition {
        case .ifMatch(let tag)?:
            headers.append((HTTPHeader.ifMatch.name, tag))
            ifMatch = tag
        case .ifNoneMatch(let tags)?: headers.append((HTTPHeader.ifNoneMatch.name, tags))
        case nil: break
        }
        let request = TransportRequest(method, Endpoint.settings.path, headers: headers, body: document.bytes)
        var settled = 0
        while true {
            switch try await attempt(request, condition == nil ? .safe : .onlyIfNotDone) {
            case .answered(let response):
                return try Self.settingsWrite(response)
            case .unsettled(let detail):
                // Read back: still at the tag named, nothing was applied and
                // the write is sent again; otherwise it was applied when the
                // stored document is what it would have made.
                let stored = try await settings()
                let untouched = ifMatch.map { EntityTags.same(stored?.etag, $0) } ?? (stored == nil)
                if untouched {
                    settled += 1
                    if settled < configuration.retry.maxAttempts { continue }
                    throw ClientError.unavailable(detail)
                }
                if let stored, Self.reflects(stored.document, method, document) { return .written(stored) }
                return .conflict(
                    status: 412,
                    error: "the settings changed while the answer was lost (\(detail)); another write landed first",
                    current: stored)
            }
        }
    }

    /// A write's answer: 200 written, 409/412 a conflict with the server's `current`.
    private static func settingsWrite(_ response: TransportResponse) throws -> SettingsWrite {
        switch response.status {
        case 200:
            return .written(BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header(HTTPHeader.etag.name)))
        case 409, 412:
            let object = try Self.object(response)
            let current = object["current"].map {
                BoxSettings(document: JSONText($0), etag: response.header(HTTPHeader.etag.name))
            }
            return .conflict(status: response.status, error: Self.errorText(response), current: current)
        default:
            throw Self.refusal(response)
        }
    }

    /// True when `stored` is what `method` with `sent` would have left:
    /// the same document for a PUT, one the patch no longer changes for a
    /// PATCH (merge patches are idempotent). `serverReceivedAt` is the
    /// server's own and not compared.
    static func reflects(_ stored: JSONText, _ method: HTTPMethod, _ sent: JSONText) -> Bool {
        func withoutStamp(_ value: JSONValue) -> JSONValue {
            guard case .object(var object) = value else { return value }
            object["serverReceivedAt"] = nil
            return .object(object)
        }
        let current = withoutStamp(stored.value)
        if method == .patch { return withoutStamp(current.merging(patch: sent.value)) == current }
        return withoutStamp(sent.value) == current
    }
}

/// Entity tags as the client compares them.
enum EntityTags {
    /// The same tag, ignoring the weak prefix gzip adds (`W/"…"`).
    static func same(_ a: String?, _ b: String) -> Bool {
        guard let a else { return false }
        func strong(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...] }
        return strong(a) == strong(b)
    }
}

extension JSONText {
    /// An answer's body, which must be a JSON object.
    init(validatingAnswer response: TransportResponse) throws {
        do {
            try self.init(validating: response.body)
        } catch {
            throw ClientError.badAnswer("status \(response.status): \(error)")
        }
    }
}

/// `settingsUpdates(after:)`: each new state of the user's settings as it
/// is stored (nil: deleted), until the task is cancelled.
public struct SettingsUpdates: AsyncSequence, Sendable {
    public typealias Element = BoxSettings?
    let client: BoxClient
    let known: BoxSettings?

    public func makeAsyncIterator() -> Iterator { Iterator(client: client, known: known) }

    public struct Iterator: AsyncIteratorProtocol {
        let client: BoxClient
        /// What the caller holds: the last document handed out (nil: none).
        var known: BoxSettings?

        /// The next state, different from the last: a document, or nil when
        /// the settings were deleted. Throws `CancellationError` once the
        /// task is cancelled.
        public mutating func next() async throws -> BoxSettings?? {
            while true {
                let etag = known?.etag
                let client = client
                let response = try await client.waitingOutUnavailable { try await client.waitForSettings(after: etag) }
                switch response.status {
                case 304: continue
                case 404:
                    guard known != nil else { continue }
                    known = nil
                    return .some(nil)
                case 200:
                    let settings = BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header(HTTPHeader.etag.name))
                    if let known, let tag = settings.etag, EntityTags.same(known.etag, tag) { continue }
                    known = settings
                    return .some(settings)
                default:
                    throw BoxClient.refusal(response)
                }
            }
        }
    }
}

extension BoxClient {
    /// Each new state of the settings after `known` (what the caller holds;
    /// nil: nothing), as soon as a write stores it: waiting requests
    /// (`GET /user/settings?wait=` with `If-None-Match`, for
    /// `ClientConfiguration.waitSeconds` at a time). A stored document that
    /// differs from `known` is handed out at once; then every later one, and
    /// nil when the settings are deleted. A write of this device's own is
    /// handed out too (the document does not say who wrote it): compare its
    /// `etag` with the one the write returned. Cancelling the task stops the
    /// waiting request at once (`CancellationError`); a broken connection or
    /// a restart of the box is retried.
    public func settingsUpdates(after known: BoxSettings?) -> SettingsUpdates {
        SettingsUpdates(client: self, known: known)
    }

    /// One waiting read. Holding nothing, it sends a tag no document has
    /// (`HeaderValue.noDocumentTag`): a stored document answers at once,
    /// and with nothing stored the box waits for one (`*` would wait past a
    /// document, which `*` names).
    func waitForSettings(after etag: String?) async throws -> TransportResponse {
        let target = Endpoint.settings.path + "?\(QueryParameters.wait)=\(configuration.waitSeconds)"
        let tag = etag ?? HeaderValue.noDocumentTag
        return try await exchange(TransportRequest(.get, target, headers: [(HTTPHeader.ifNoneMatch.name, tag)]), .safe)
    }
}
