import Glibc

/// A JSON value that keeps what the client sent: object member order and the
/// literal text of every number (`0.9990998620664758`, `12345678901234567890`).
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number exactly as written in the source, e.g. `1.50e3`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The members when this is an object.
    package var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// The text when this is a string.
    package var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// One `"key": value` pair of an object.
package struct JSONMember: Equatable, Sendable {
    package var key: String
    package var value: JSONValue

    package init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A JSON object as an ordered list of members with unique keys.
/// Setting an existing key replaces its value in place (as a Python dict does);
/// a new key is appended; setting `nil` removes the member.
package struct JSONObject: Equatable, Sendable {
    package private(set) var members: [JSONMember] = []

    package init() {}

    /// Builds an object; a repeated key keeps its first position and last value.
    package init(_ members: [JSONMember]) {
        for member in members { self[member.key] = member.value }
    }

    package var isEmpty: Bool { members.isEmpty }
    package var count: Int { members.count }

    /// The position of `key`. Keys are compared by their code points, as
    /// JSON and Python compare them: Swift's `==` on strings would take "é"
    /// and "e\u{301}", or "K" and the Kelvin sign, for one key.
    package func index(of key: String) -> Int? {
        members.firstIndex { JSONObject.sameBytes($0.key, key) }
    }

    /// Equal UTF-8 bytes, compared as memory (a `UTF8View` walked byte by
    /// byte took most of a feed page's time).
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let count = a.utf8.count
        guard count == b.utf8.count else { return false }
        return a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in count == 0 || memcmp(x.baseAddress!, y.baseAddress!, count) == 0 }
        }.flatMap { $0 } ?? a.utf8.elementsEqual(b.utf8)
    }

    package subscript(key: String) -> JSONValue? {
        get { index(of: key).map { members[$0].value } }
        set {
            let found = index(of: key)
            switch (found, newValue) {
            case (let i?, let value?): members[i].value = value
            case (let i?, nil): members.remove(at: i)
            case (nil, let value?): members.append(JSONMember(key, value))
            case (nil, nil): break
            }
        }
    }

    /// An object from members whose keys the caller knows to be unique.
    init(uniqueMembers: [JSONMember]) {
        members = uniqueMembers
    }

    /// Appends a member whose key the caller knows to be new (the parser uses
    /// this with its own index so that large objects stay linear).
    mutating func appendNew(_ key: String, _ value: JSONValue) {
        members.append(JSONMember(key, value))
    }

    /// Replaces the value at a known position.
    mutating func replaceValue(at index: Int, with value: JSONValue) {
        members[index].value = value
    }
}

extension JSONValue {
    /// Applies an RFC 7396 merge patch: members of an object patch replace in
    /// place, new ones are appended, `null` removes, nested objects merge;
    /// any other patch replaces the whole value.
    package func merging(patch: JSONValue) -> JSONValue {
        guard case .object(let patchObject) = patch else { return patch }
        let target = objectValue ?? JSONObject()
        if target.count + patchObject.count > JSONParser.linearSearchLimit {
            return .object(Self.mergeLarge(target, patchObject))
        }
        var merged = target
        for member in patchObject.members {
            if member.value == .null {
                merged[member.key] = nil
            } else {
                merged[member.key] = (merged[member.key] ?? .null).merging(patch: member.value)
            }
        }
        return .object(merged)
    }

    /// The same merge in one pass over each side, with the patch indexed by
    /// key, so that a PATCH near the 1 MiB limit stays linear.
    private static func mergeLarge(_ target: JSONObject, _ patch: JSONObject) -> JSONObject {
        // Keyed by UTF-8 bytes: code points, not canonical equivalence (see `index(of:)`).
        let patchValues = Dictionary(patch.members.map { (Array($0.key.utf8), $0.value) }) { _, last in last }
        var merged: [JSONMember] = []
        merged.reserveCapacity(target.count + patch.count)
        var seen = Set<[UInt8]>()
        for member in target.members {
            seen.insert(Array(member.key.utf8))
            guard let change = patchValues[Array(member.key.utf8)] else {
                merged.append(member)
                continue
            }
            if change != .null { merged.append(JSONMember(member.key, member.value.merging(patch: change))) }
        }
        for member in patch.members where member.value != .null && !seen.contains(Array(member.key.utf8)) {
            merged.append(JSONMember(member.key, JSONValue.null.merging(patch: member.value)))
        }
        return JSONObject(uniqueMembers: merged)
    }
}
