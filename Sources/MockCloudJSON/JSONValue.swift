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

    /// The number when this is an integer that fits in Int64 (written
    /// without a point or an exponent).
    package var int64Value: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
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
