import MockCloudJSON

/// A sync version as `X-Sync-Version` and a bulk item's `version` spell
/// it: 1 to 18 decimal digits (no sign, no point, no exponent).
package enum SyncVersion {
    /// Every version a writer may send.
    package static let range: ClosedRange<Int64> = 0...999_999_999_999_999_999

    /// The version `text` spells; `nil` when it spells none.
    package static func parse(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy(ASCII.isDigit) else { return nil }
        return Int64(text)
    }
}

/// `POST /inbox:bulk`'s body (docs/API.md §8): `{"messages": [item, ...]}`,
/// each item a PUT (`{"id", "version"?, "body"}`) or a DELETE (`{"id",
/// "deleted": true}`) of one message. The client writes it, the server reads it.
package enum BulkRequest {
    /// One change, as the client sends it.
    package enum Item: Sendable {
        /// `body` is a JSON object in its compact form.
        case put(MessageID, version: Int64, body: [UInt8])
        case delete(MessageID)
    }

    /// The body's bytes before the first item and after the last; items
    /// are joined by `separator`.
    package static let opening = Array(#"{"messages": ["#.utf8)
    package static let closing = Array("]}".utf8)
    package static let separator = Array(", ".utf8)

    /// One item's JSON: ids need no escaping (their alphabet has no quote
    /// or backslash), bodies are compact JSON already.
    package static func encode(_ item: Item) -> [UInt8] {
        var out = Array(#"{"id": ""#.utf8)
        switch item {
        case .put(let id, let version, let body):
            out += Array(id.rawValue.utf8)
            out += Array(#"", "version": "#.utf8)
            ASCII.appendDecimal(Int(version), to: &out)
            out += Array(#", "body": "#.utf8) + body + [UInt8(ascii: "}")]
        case .delete(let id):
            out += Array(id.rawValue.utf8)
            out += Array(#"", "deleted": true}"#.utf8)
        }
        return out
    }

    /// The body of items already encoded (`encode(_:)`).
    package static func body(_ encodedItems: [[UInt8]]) -> [UInt8] {
        var out = opening
        for (n, item) in encodedItems.enumerated() {
            if n > 0 { out += separator }
            out += item
        }
        return out + closing
    }

    /// One item as the server reads it: the change it asks for, or why it
    /// asks for none (answered for that item alone).
    package enum Decoded {
        case put(MessageID, version: Int64, body: JSONValue)
        case delete(MessageID)
        case invalid(id: JSONValue, ItemProblem)
    }

    /// What is wrong with one item.
    package enum ItemProblem: Equatable {
        /// `id` is missing or not a message id.
        case invalidID
        /// A member other than `id`, `version`, `body` and `deleted`.
        case unknownMember(String)
        /// `deleted` other than `true`, or beside `version` or `body`.
        case malformedDeletion
        /// A `version` that is not a sync version (`SyncVersion`).
        case invalidVersion(JSONValue)
        /// A `body` that is missing or not an object.
        case bodyNotAnObject
    }

    /// The items of a parsed body, in order; throws `BulkRequestError` when
    /// the body is not `{"messages": [object, ...]}` of at most
    /// `WireLimits.bulkItems` (nothing of it is to be written).
    package static func items(of body: JSONValue) throws -> [Decoded] {
        guard let envelope = body.objectValue, envelope.members.count == 1, case .array(let list)? = envelope["messages"]
        else { throw BulkRequestError.notAnEnvelope }
        if list.count > WireLimits.bulkItems { throw BulkRequestError.tooManyItems(count: list.count) }
        var items: [Decoded] = []
        items.reserveCapacity(list.count)
        for (index, value) in list.enumerated() {
            guard let object = value.objectValue else { throw BulkRequestError.itemNotAnObject(index: index) }
            items.append(item(object))
        }
        return items
    }

    /// Reads one item as its single request would read its id, headers and body.
    private static func item(_ object: JSONObject) -> Decoded {
        let idValue = object["id"] ?? .null
        guard let idText = idValue.stringValue, let id = MessageID(idText) else { return .invalid(id: idValue, .invalidID) }
        for member in object.members where !["id", "version", "body", "deleted"].contains(member.key) {
            return .invalid(id: idValue, .unknownMember(member.key))
        }
        if let deleted = object["deleted"] {
            guard deleted == .bool(true), object["body"] == nil, object["version"] == nil else {
                return .invalid(id: idValue, .malformedDeletion)
            }
            return .delete(id)
        }
        var version: Int64 = 0
        if let value = object["version"] {
            guard case .number(let text) = value, let number = SyncVersion.parse(text) else {
                return .invalid(id: idValue, .invalidVersion(value))
            }
            version = number
        }
        guard let body = object["body"], body.objectValue != nil else { return .invalid(id: idValue, .bodyNotAnObject) }
        return .put(id, version: version, body: body)
    }
}

/// What is wrong with a `POST /inbox:bulk` body as a whole: nothing is written.
package enum BulkRequestError: Error, Equatable {
    case notAnEnvelope
    case itemNotAnObject(index: Int)
    case tooManyItems(count: Int)
}

/// One item's result in a bulk answer, `{"results": [result, ...]}` in item
/// order: `{"id", "status", "seq"?, "error"?, "current"?}`, the status what
/// the single request would have answered. The server writes it, the
/// client reads it.
package struct BulkResult: Sendable, Equatable {
    /// The item's `id` as it sent it (an invalid item's may be anything).
    package var id: JSONValue
    package var status: Int
    /// The change's place in the feed: a write's, a deletion's.
    package var seq: Int64?
    package var error: String?
    /// What is stored, beside a 409 (`nil` too when it does not read as an envelope).
    package var current: Envelope?

    package init(id: JSONValue, status: Int, seq: Int64? = nil, error: String? = nil, current: Envelope? = nil) {
        self.id = id
        self.status = status
        self.seq = seq
        self.error = error
        self.current = current
    }

    package var json: JSONValue {
        var members = [JSONMember("id", id), JSONMember("status", .number(String(status)))]
        if let seq { members.append(JSONMember("seq", .number(String(seq)))) }
        if let error { members.append(JSONMember("error", .string(error))) }
        if let current { members.append(JSONMember("current", current.json)) }
        return .object(JSONObject(uniqueMembers: members))
    }

    /// Reads `json`'s form back; `nil` when it is not one.
    package init?(json value: JSONValue) {
        guard let object = value.objectValue, let id = object["id"], let status = object["status"]?.int64Value
        else { return nil }
        var current: Envelope?
        if case .object(let members)? = object["current"] { current = Envelope(members) }
        self.init(id: id, status: Int(status), seq: object["seq"]?.int64Value, error: object["error"]?.stringValue,
                  current: current)
    }

    /// The answer's body.
    package static func answer(_ results: [BulkResult]) -> [UInt8] {
        var out = Array(#"{"results": ["#.utf8)
        for (index, result) in results.enumerated() {
            if index > 0 { out += BulkRequest.separator }
            out += JSONPrinter.compact(result.json)
        }
        out += Array("]}".utf8)
        return out
    }

    /// The results of an answer's parsed body, `nil` for each that does not
    /// read as one; `nil` when it has no list of results.
    package static func results(of answer: JSONValue) -> [BulkResult?]? {
        guard case .array(let list)? = answer.objectValue?["results"] else { return nil }
        return list.map { BulkResult(json: $0) }
    }
}
