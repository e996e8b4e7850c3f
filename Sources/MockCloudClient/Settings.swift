/// The user's settings document and its entity tag.
public struct Settings: Sendable, Equatable {
    public var document: JSONText
    /// The `ETag` as the server sent it (possibly weak, `W/"…"`, when the
    /// answer was gzipped): send it back unchanged as `If-Match`.
    public var etag: String?

    public init(document: JSONText, etag: String?) {
        self.document = document
        self.etag = etag
    }
}

/// What a settings write did.
public enum SettingsWrite: Sendable, Equatable {
    /// 200: stored (`serverReceivedAt` set by the server).
    case written(Settings)
    /// 409 (the document's `updatedAt` is older than the stored one) or 412
    /// (`If-Match` did not hold): nothing was written; `current` is the
    /// server's document (nil when nothing is stored), for the caller to
    /// merge or give up.
    case conflict(status: Int, error: String, current: Settings?)
}

extension MockCloudClient {
    /// The stored settings; nil when none are stored (404).
    public func settings() async throws(ClientError) -> Settings? {
        let response = try await exchange(HTTPRequest(method: "GET", target: "/user/settings"), .safe)
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw Self.refusal(response) }
        return Settings(document: try JSONText(validatingAnswer: response), etag: response.header("etag"))
    }

    /// Replaces the document (`PUT`); last writer wins by `updatedAt`.
    /// With `ifMatch`, only if the stored document still has that tag.
    public func putSettings(_ document: JSONText, ifMatch: String? = nil) async throws(ClientError) -> SettingsWrite {
        try await writeSettings("PUT", "application/json", document, ifMatch: ifMatch)
    }

    /// Applies an RFC 7396 merge patch (`PATCH`): fields replace in place,
    /// `null` removes, nested objects merge.
    public func patchSettings(_ patch: JSONText, ifMatch: String? = nil) async throws(ClientError) -> SettingsWrite {
        try await writeSettings("PATCH", "application/merge-patch+json", patch, ifMatch: ifMatch)
    }

    /// A PUT or a merge patch gives the same result when sent twice, so a
    /// lost answer is retried; a conditional one is not (its first attempt
    /// may have changed the tag it names).
    private func writeSettings(
        _ method: String, _ type: String, _ document: JSONText, ifMatch: String?
    ) async throws(ClientError) -> SettingsWrite {
        var headers = [(name: "Content-Type", value: type)]
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        let request = HTTPRequest(method: method, target: "/user/settings", headers: headers, body: document.bytes)
        let response = try await exchange(request, ifMatch == nil ? .safe : .onlyIfNotDone)
        switch response.status {
        case 200:
            return .written(Settings(document: try JSONText(validatingAnswer: response), etag: response.header("etag")))
        case 409, 412:
            let object = try Self.object(response)
            let current = object["current"].map {
                Settings(document: JSONText($0), etag: response.header("etag"))
            }
            return .conflict(status: response.status, error: Self.errorText(response), current: current)
        default:
            throw Self.refusal(response)
        }
    }
}

extension JSONText {
    /// An answer's body, which must be a JSON object.
    init(validatingAnswer response: HTTPResponse) throws(ClientError) {
        do {
            try self.init(validating: response.body)
        } catch {
            throw .badAnswer("status \(response.status): \(error)")
        }
    }
}
