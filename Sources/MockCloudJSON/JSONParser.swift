
/// A strict RFC 8259 parser over UTF-8 bytes that keeps member order and
/// number text. Duplicate keys keep their first position and last value,
/// as Python's `json.loads` does.
package struct JSONParser {
    /// The nesting limit of every route: the top value is level 1.
    package static let defaultMaxDepth = 64
    /// The nesting limit for files already stored: the Python service wrote
    /// whatever its own parser took (about 1000 levels), and an inbox
    /// envelope adds a level around a body that used all 64.
    package static let storedDocumentMaxDepth = 1000
    /// Objects up to this many members find duplicate keys by a linear search.
    static let linearSearchLimit = 32

    /// Parses a whole document.
    /// - Parameter allowNonFinite: accept `NaN`, `Infinity` and `-Infinity`,
    ///   which Python's `json` module writes; only for files already stored.
    package static func parse(
        _ bytes: [UInt8], maxDepth: Int = defaultMaxDepth, allowNonFinite: Bool = false
    ) throws -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth, allowNonFinite: allowNonFinite)
        // A UTF-8 byte order mark is ignored, as Python's json.loads(bytes) does.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.parseValue(level: 1)
        parser.skipWhitespace()
        if parser.index != bytes.count { throw parser.failure("unexpected data after the JSON value") }
        return value
    }

    let bytes: [UInt8]
    let maxDepth: Int
    let allowNonFinite: Bool
    var index = 0

    init(bytes: [UInt8], maxDepth: Int, allowNonFinite: Bool) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.allowNonFinite = allowNonFinite
    }

    func failure(_ reason: String) -> JSONError {
        .invalid(offset: index, reason: reason)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(level: Int) throws -> JSONValue {
        if level > maxDepth { throw JSONError.tooDeep(limit: maxDepth) }
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(level: level)
        case UInt8(ascii: "["): return try parseArray(level: level)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "N") where allowNonFinite: try expectLiteral("NaN"); return .number("NaN")
        case UInt8(ascii: "I") where allowNonFinite: try expectLiteral("Infinity"); return .number("Infinity")
        case UInt8(ascii: "-") where allowNonFinite && matches("-Infinity"):
            index += 9
            return .number("-Infinity")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    func matches(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { expected in
            for i in 0..<count where bytes[index + i] != expected[i] { return false }
            return true
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        guard matches(literal) else { throw failure("invalid literal") }
        index += literal.utf8CodeUnitCount
    }

    private mutating func parseObject(level: Int) throws -> JSONValue {
        index += 1
        var object = JSONObject()
        // Positions by key, built only for large objects so that duplicate
        // detection stays linear; a small object is searched directly (a
        // dictionary's first use costs more than a CGI request's whole parse).
        var positions: [[UInt8]: Int]?  // by UTF-8 bytes, as `JSONObject.index(of:)` compares
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name in double quotes") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':' after a member name") }
            index += 1
            skipWhitespace()
            let value = try parseValue(level: level + 1)
            if positions == nil, object.count >= Self.linearSearchLimit {
                positions = Dictionary(object.members.enumerated().map { (Array($1.key.utf8), $0) }) { first, _ in first }
            }
            if let existing = positions?[Array(key.utf8)] ?? (positions == nil ? object.index(of: key) : nil) {
                object.replaceValue(at: existing, with: value)
            } else {
                positions?[Array(key.utf8)] = object.count
                object.appendNew(key, value)
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return .object(object)
            default:
                throw failure("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray(level: Int) throws -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(level: level + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default:
                throw failure("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func parseNumber() throws -> String {
        let start = index
        try skipNumber()
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Moves past one number (RFC 8259's grammar, no leading `+` or zeros).
    mutating func skipNumber() throws {
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw failure("invalid number") }
        index += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let digit = current, isDigit(digit) else { throw failure("invalid number: digits must follow '.'") }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let digit = current, isDigit(digit) else { throw failure("invalid number: digits must follow the exponent") }
            skipDigits()
        }
    }

    private func isDigit(_ byte: UInt8) -> Bool { ASCII.isDigit(byte) }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { index += 1 }
    }

    private mutating func parseString() throws -> String {
        index += 1
        let start = index
        // Fast path: plain ASCII without escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<index - 1], as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            index += 1
        }
        var utf8 = Array(bytes[start..<index])
        var hasNonASCII = false
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                if hasNonASCII {
                    guard let text = ASCII.validUTF8(utf8) else {
                        throw JSONError.invalid(offset: start, reason: "string is not valid UTF-8")
                    }
                    return text
                }
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                try appendEscape(to: &utf8)
            case 0..<0x20:
                throw failure("control character in a string")
            default:
                if byte >= 0x80 { hasNonASCII = true }
                utf8.append(byte)
                index += 1
            }
        }
    }

    private mutating func appendEscape(to utf8: inout [UInt8]) throws {
        guard let byte = current else { throw failure("unterminated escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): utf8.append(0x22)
        case UInt8(ascii: "\\"): utf8.append(0x5C)
        case UInt8(ascii: "/"): utf8.append(0x2F)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard matches("\\u") else { throw failure("unpaired surrogate in \\u escape") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate in \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("unpaired surrogate in \\u escape")
            }
            appendUTF8(scalar, to: &utf8)
        default:
            index -= 1
            throw failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = ASCII.hexValue(bytes[index]) else { throw failure("invalid hex digit in \\u escape") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32, to utf8: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            utf8.append(UInt8(scalar))
        case 0x80..<0x800:
            utf8.append(UInt8(0xC0 | scalar >> 6))
            utf8.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            utf8.append(UInt8(0xE0 | scalar >> 12))
            utf8.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            utf8.append(UInt8(0x80 | scalar & 0x3F))
        default:
            utf8.append(UInt8(0xF0 | scalar >> 18))
            utf8.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            utf8.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            utf8.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
