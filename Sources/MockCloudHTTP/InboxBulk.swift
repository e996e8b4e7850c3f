import MockCloudJSON
import MockCloudStore
import MockCloudWire

/// What is wrong with a `POST /inbox:bulk` request as a whole: nothing is written.
package enum InboxBulkError: HTTPResponseError, Equatable {
    case notAnEnvelope
    case itemNotAnObject(index: Int)
    case tooManyItems(count: Int)

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
            return "too many messages: POST /inbox:bulk accepts up to \(InboxRoute.bulkItemLimit) per request, "
                + "this one has \(count); nothing was written"
        }
    }
}

/// `POST /inbox:bulk` (a custom method in the style of AIP-136, never a
/// message id): `{"messages": [item, ...]}`, each item a PUT
/// (`{"id", "version"?, "body"}`) or a DELETE (`{"id", "deleted": true}`) of
/// one message, with the request's `X-Device-Id`. The answer is 200
/// `{"results": [{"id", "status", "seq"?, "error"?, "current"?}, ...]}` in
/// item order, each status what the single request would have answered.
/// The items apply in order under one lock, so a later item with the same
/// id sees the earlier one: the last write of an id wins, and every item's
/// result is what it would have been had the items been sent one by one.
extension InboxRoute {
    package static let bulkPath = "/inbox:bulk"
    /// The largest bulk request body: 8 MiB (the limit itself is accepted).
    package static let bulkBodyLimit = WireLimits.bulkBodyBytes
    package static let bulkItemLimit = WireLimits.bulkItems

    /// One parsed item: a change to apply, or the answer to an item that is
    /// not one (written nowhere).
    private enum BulkItem {
        case change(InboxStore.Change)
        case invalid(id: JSONValue, status: HTTPStatus, error: String)
    }

    func bulk(_ request: CGIRequest, afterAnswer: inout Upkeep) throws -> CGIResponse {
        guard request.method == .post else {
            throw RequestError.methodNotAllowed(method: request.method, path: request.path, allowed: [.post])
        }
        _ = try request.userKey()  // a missing key is a 400 before the body is read
        let source = try Self.source(request)
        // An item's body may nest as deep as a single PUT's body.
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(request.body, maxDepth: JSONParser.defaultMaxDepth + 3)
        } catch {
            throw RequestError.invalidJSON(JSONError(error))
        }
        guard let envelope = parsed.objectValue, envelope.members.count == 1,
            case .array(let list)? = envelope["messages"]
        else { throw InboxBulkError.notAnEnvelope }
        if list.count > Self.bulkItemLimit { throw InboxBulkError.tooManyItems(count: list.count) }
        var items: [BulkItem] = []
        items.reserveCapacity(list.count)
        for (index, value) in list.enumerated() {
            guard let object = value.objectValue else { throw InboxBulkError.itemNotAnObject(index: index) }
            items.append(Self.item(object))
        }
        let store = try store(for: request, afterAnswer: &afterAnswer)  // no planted links, as for a single write
        var changes: [InboxStore.Change] = []
        for case .change(let change) in items { changes.append(change) }
        var outcomes = (changes.isEmpty ? [] : try store.apply(changes, source: source))[...]
        var out = Array(#"{"results": ["#.utf8)
        for (index, item) in items.enumerated() {
            if index > 0 { out += Array(", ".utf8) }
            var result = JSONObject()
            switch item {
            case .invalid(let id, let status, let error):
                result = JSONObject([JSONMember("id", id), JSONMember("status", .number(String(status.code))),
                                     JSONMember("error", .string(error))])
            case .change(let change):
                result["id"] = .string(change.id.rawValue)
                Self.describe(outcomes.removeFirst(), into: &result)
            }
            out += JSONPrinter.compact(.object(result))
        }
        out += Array("]}".utf8)
        return CGIResponse(status: 200, body: out)
    }

    /// The members of one result: the status the single request would have
    /// answered, and its `seq`, `error` or `current`.
    private static func describe(_ outcome: InboxStore.ChangeOutcome, into result: inout JSONObject) {
        switch outcome {
        case .written(.created(let envelope)): result.add(201, seq: envelope.seq)
        case .written(.replaced(let envelope)), .written(.unchanged(let envelope)): result.add(200, seq: envelope.seq)
        case .deleted(let tombstone): result.add(204, seq: tombstone.seq)
        case .refused(let error):
            result["status"] = .number(String(error.status.code))
            // An item's version is its `version` member, not a header.
            if case .lowerVersion(let incoming, let current) = error {
                result["error"] = .string(
                    "version \(incoming) is lower than the stored version \(current.version); nothing was written")
            } else {
                result["error"] = .string(error.message)
            }
            for member in error.extraMembers { result[member.key] = member.value }
        }
    }

    /// Reads one item as its single request would read its id, headers and body.
    private static func item(_ object: JSONObject) -> BulkItem {
        let idValue = object["id"] ?? .null
        func invalid(_ status: HTTPStatus, _ error: String) -> BulkItem { .invalid(id: idValue, status: status, error: error) }
        guard let idText = idValue.stringValue, let id = MessageID(idText) else {
            return invalid(400, InboxRequestError.invalidMessageID.message)
        }
        for member in object.members where !["id", "version", "body", "deleted"].contains(member.key) {
            return invalid(400, "unknown member \(String(reflecting: member.key)): an item has id, version and body, or id and deleted")
        }
        if let deleted = object["deleted"] {
            guard deleted == .bool(true), object["body"] == nil, object["version"] == nil else {
                return invalid(400, #"a deletion is {"id": ..., "deleted": true} and nothing else"#)
            }
            return .change(.delete(id))
        }
        var version: Int64 = 0
        if let value = object["version"] {
            guard case .number(let text) = value, let number = syncVersion(text) else {
                return invalid(400, "invalid version \(String(decoding: JSONPrinter.compact(value), as: UTF8.self)): must be a non-negative integer")
            }
            version = number
        }
        guard let body = object["body"], body.objectValue != nil else {
            return invalid(400, "body must be a JSON object")
        }
        let printed = PrintedJSON(body)  // measured here, stored as it is
        if printed.compact.count > bodyLimit {
            return invalid(413, RequestError.bodyTooLarge(limit: bodyLimit).message)
        }
        return .change(.put(id, version: version, body: printed))
    }
}

extension JSONObject {
    fileprivate mutating func add(_ status: HTTPStatus, seq: Int64) {
        self["status"] = .number(String(status.code))
        self["seq"] = .number(String(seq))
    }
}
