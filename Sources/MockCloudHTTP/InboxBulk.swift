import MockCloudJSON
import MockCloudStore
import MockCloudWire

extension BulkRequestError: HTTPResponseError {
    package var status: HTTPStatus {
        if case .tooManyItems = self { return .contentTooLarge }
        return .badRequest
    }

    package var message: String {
        switch self {
        case .notAnEnvelope:
            return #"body must be {"messages": [item, ...]}; nothing was written"#
        case .itemNotAnObject(let index):
            return "messages[\(index)] is not a JSON object; nothing was written"
        case .tooManyItems(let count):
            return "too many messages: POST /inbox:bulk accepts up to \(WireLimits.bulkItems) per request, "
                + "this one has \(count); nothing was written"
        }
    }
}

/// `POST /inbox:bulk` (a custom method in the style of AIP-136, never a
/// message id): `BulkRequest`'s items, each with the request's
/// `X-Device-Id`, answered 200 with a `BulkResult` per item.
/// The items apply in order under one lock, so a later item with the same
/// id sees the earlier one: the last write of an id wins, and every item's
/// result is what it would have been had the items been sent one by one.
extension InboxRoute {
    /// The largest bulk request body: 8 MiB (the limit itself is accepted).
    package static let bulkBodyLimit = WireLimits.bulkBodyBytes

    func bulk(_ request: CGIRequest, afterAnswer: inout Upkeep) throws -> CGIResponse {
        guard request.method == .post else {
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: Endpoint.bulk.methods)
        }
        _ = try QueryString(request, takes: QueryParameters.none)
        _ = try request.userKey()  // a missing key is a 400 before the body is read
        let source = try Self.source(request)
        // An item's body may nest as deep as a single PUT's body.
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(request.body, maxDepth: JSONParser.defaultMaxDepth + 3)
        } catch {
            throw RequestError.invalidJSON(JSONError(error))
        }
        let items = try BulkRequest.items(of: parsed).map(Self.change)
        let store = try store(for: request, afterAnswer: &afterAnswer)  // no planted links, as for a single write
        var changes: [InboxStore.Change] = []
        for case .success(let change) in items { changes.append(change) }
        var outcomes = (changes.isEmpty ? [] : try store.apply(changes, source: source))[...]
        let results = items.map { item -> BulkResult in
            switch item {
            case .failure(let invalid): return invalid.result
            case .success(let change): return Self.result(change.id, outcomes.removeFirst())
            }
        }
        return CGIResponse(status: 200, body: BulkResult.answer(results))
    }

    /// An item that asks for no change: its result, written nowhere.
    private struct InvalidItem: Error {
        let result: BulkResult
        init(_ id: JSONValue, _ status: HTTPStatus, _ error: String) {
            result = BulkResult(id: id, status: status.code, error: error)
        }
    }

    /// One item as a store change, or its result when it asks for none.
    private static func change(_ item: BulkRequest.Decoded) -> Result<InboxStore.Change, InvalidItem> {
        switch item {
        case .delete(let id): return .success(.delete(id))
        case .put(let id, let version, let body):
            let printed = PrintedJSON(body)  // measured here, stored as it is
            if printed.compact.count > bodyLimit {
                return .failure(InvalidItem(.string(id.rawValue), 413, RequestError.bodyTooLarge(limit: bodyLimit).message))
            }
            return .success(.put(id, version: version, body: printed))
        case .invalid(let id, .invalidID): return .failure(InvalidItem(id, 400, InboxRequestError.invalidMessageID.message))
        case .invalid(let id, .unknownMember(let name)):
            return .failure(InvalidItem(
                id, 400, "unknown member \(String(reflecting: name)): an item has id, version and body, or id and deleted"))
        case .invalid(let id, .malformedDeletion):
            return .failure(InvalidItem(id, 400, #"a deletion is {"id": ..., "deleted": true} and nothing else"#))
        case .invalid(let id, .invalidVersion(let value)):
            let text = String(decoding: JSONPrinter.compact(value), as: UTF8.self)
            return .failure(InvalidItem(id, 400, "invalid version \(text): must be a non-negative integer"))
        case .invalid(let id, .bodyNotAnObject): return .failure(InvalidItem(id, 400, "body must be a JSON object"))
        }
    }

    /// A change's result: the status the single request would have
    /// answered, and its `seq`, `error` or `current`.
    private static func result(_ id: MessageID, _ outcome: InboxStore.ChangeOutcome) -> BulkResult {
        let id = JSONValue.string(id.rawValue)
        switch outcome {
        case .written(.created(let stored)): return BulkResult(id: id, status: 201, seq: stored.envelope.seq)
        case .written(.replaced(let stored)), .written(.unchanged(let stored)):
            return BulkResult(id: id, status: 200, seq: stored.envelope.seq)
        case .deleted(let tombstone): return BulkResult(id: id, status: 204, seq: tombstone.envelope.seq)
        case .refused(let error):
            var result = BulkResult(id: id, status: error.status.code, error: error.message)
            // An item's version is its `version` member, not a header.
            if case .lowerVersion(let incoming, let current) = error {
                result.error = "version \(incoming) is lower than the stored version \(current.version); nothing was written"
                result.current = current
            }
            return result
        }
    }
}
