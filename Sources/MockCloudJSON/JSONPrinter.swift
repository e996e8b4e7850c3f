
/// Writes JSON byte for byte as Python's `json.dumps` does (`ensure_ascii`,
/// `", "` and `": "` separators), except that numbers keep their source text.
package enum JSONPrinter {
    /// `json.dumps(value)`: one line; what the Python service sends on the wire.
    package static func compact(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out, indent: nil, level: 0)
        return out
    }

    /// `json.dumps(value, indent=2)`: what the Python service stores on disk
    /// (two-space indent, `,` at line ends, no trailing newline).
    package static func pretty(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(value, into: &out, indent: 2, level: 0)
        return out
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8], indent: Int?, level: Int) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            writeContainer(open: "[", close: "]", count: elements.count, into: &out, indent: indent, level: level) { i, out in
                write(elements[i], into: &out, indent: indent, level: level + 1)
            }
        case .object(let object):
            writeContainer(open: "{", close: "}", count: object.count, into: &out, indent: indent, level: level) { i, out in
                let member = object.members[i]
                writeString(member.key, into: &out)
                out.append(contentsOf: ": ".utf8)
                write(member.value, into: &out, indent: indent, level: level + 1)
            }
        }
    }

    private static func writeContainer(
        open: Unicode.Scalar, close: Unicode.Scalar, count: Int, into out: inout [UInt8],
        indent: Int?, level: Int, element: (Int, inout [UInt8]) -> Void
    ) {
        out.append(UInt8(ascii: open))
        if count == 0 {
            out.append(UInt8(ascii: close))
            return
        }
        for i in 0..<count {
            if let indent {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(into: &out, spaces: indent * (level + 1))
            } else if i > 0 {
                out.append(contentsOf: ", ".utf8)
            }
            element(i, &out)
        }
        if let indent { newline(into: &out, spaces: indent * level) }
        out.append(UInt8(ascii: close))
    }

    private static func newline(into out: inout [UInt8], spaces: Int) {
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: spaces))
    }

    /// A string with Python's `ensure_ascii` escapes: printable ASCII as is,
    /// `\"` `\\` `\n` `\r` `\t` `\b` `\f`, everything else as `\uXXXX`
    /// (lowercase hex, surrogate pairs above U+FFFF).
    package static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (keys, ids, dates, units) are printable ASCII with no
        // quote or backslash: one scan, one copy. The scalar loop below
        // costs many times more per byte, and a bulk write prints every
        // string of every sample.
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte > 0x7E || byte == 0x22 || byte == 0x5C { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for scalar in text.unicodeScalars {
            let v = scalar.value
            switch v {
            case 0x22: out.append(contentsOf: "\\\"".utf8)
            case 0x5C: out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0x08: out.append(contentsOf: "\\b".utf8)
            case 0x0C: out.append(contentsOf: "\\f".utf8)
            case 0x20...0x7E: out.append(UInt8(v))
            case 0x10000...:
                let offset = v - 0x10000
                writeUnicodeEscape(0xD800 + (offset >> 10), into: &out)
                writeUnicodeEscape(0xDC00 + (offset & 0x3FF), into: &out)
            default: writeUnicodeEscape(v, into: &out)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeUnicodeEscape(_ unit: UInt32, into out: inout [UInt8]) {
        out.append(contentsOf: "\\u".utf8)
        ASCII.appendHex(UInt64(unit), digits: 4, to: &out)
    }
}
