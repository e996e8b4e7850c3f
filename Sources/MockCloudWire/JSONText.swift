import MockCloudJSON

/// A JSON object as bytes, in the server's compact form (`json.dumps`):
/// member order and number text exactly as written, so a body makes the same
/// bytes every time and a retried write is recognised as unchanged. Decode it
/// with whatever JSON library the app prefers.
public struct JSONText: Sendable, Hashable, CustomStringConvertible {
    /// The compact UTF-8 bytes.
    public let bytes: [UInt8]
    package let value: JSONValue

    /// Parses `bytes` (strict RFC 8259, up to 64 levels, as the server does)
    /// and keeps its compact form; throws for anything but a JSON object
    /// (an error whose description says why).
    public init(validating bytes: [UInt8]) throws {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw JSONTextError.notJSON("\(error)")
        }
        guard value.objectValue != nil else { throw JSONTextError.notAnObject }
        self.init(value)
    }

    /// The same for text.
    public init(validating text: String) throws {
        try self.init(validating: Array(text.utf8))
    }

    package init(_ value: JSONValue) {
        self.value = value
        bytes = JSONPrinter.compact(value)
    }

    /// The compact text.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// The top-level member `name` when it is a non-negative integer of at
    /// most 18 digits (the server's `X-Sync-Version` range); nil when absent.
    /// Throws when it is there but not such a number.
    public func version(member name: String) throws -> Int64? {
        guard let member = value.objectValue?[name] else { return nil }
        guard case .number(let text) = member, (1...18).contains(text.utf8.count),
            text.utf8.allSatisfy(ASCII.isDigit), let number = Int64(text)
        else { throw JSONTextError.notAVersion(member: name) }
        return number
    }

    public static func == (a: JSONText, b: JSONText) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}

/// Why bytes are not a `JSONText`, or a member not a sync version. Not
/// public: an app reads the error's description (the client's API names no
/// wire error an app would have to match exhaustively).
package enum JSONTextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not JSON at all (strict RFC 8259); the parser's reason.
    case notJSON(String)
    /// JSON, but not an object.
    case notAnObject
    /// The member is there but not an integer of 0 to 18 digits.
    case notAVersion(member: String)

    package var description: String {
        switch self {
        case .notJSON(let reason): return "not valid JSON: \(reason)"
        case .notAnObject: return "not a JSON object"
        case .notAVersion(let name): return "\"\(name)\" must be a non-negative integer of at most 18 digits"
        }
    }
}
