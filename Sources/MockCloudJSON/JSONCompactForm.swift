/// A stored document's one-line form, read without building the document.
///
/// `GET /user/settings` answers `json.dumps(json.loads(file))`: the file this
/// service and the Python one store (`json.dumps(doc, indent=2)`) printed
/// again on one line. For a file in the printers' own form (strings holding
/// only the escapes `JSONPrinter.writeString` writes, no key twice in an
/// object) that answer is the file's own tokens with `", "` and `": "`
/// between them, so it is copied token by token: no tree, no strings, no
/// member arrays, which were much of what a GET cost. Anything else
/// (a hand edit with `\/`, raw UTF-8 or a repeated key, nesting past 64
/// levels, an object of more than `compactFormMemberLimit` members, a byte order
/// mark, a damaged file) gets `nil`, and the full parser and printer answer
/// it as before, errors included.
extension JSONParser {
    /// The most members an object may have for `compactForm(ofStored:)`,
    /// which looks for a repeated key among them one by one.
    static let compactFormMemberLimit = 64

    /// `JSONPrinter.compact(try parse(bytes, maxDepth: storedDocumentMaxDepth,
    /// allowNonFinite: true))` for a document in the printers' own form;
    /// `nil` for any other text, valid or not.
    package static func compactForm(ofStored bytes: [UInt8]) -> [UInt8]? {
        var reader = JSONParser(bytes: bytes, maxDepth: defaultMaxDepth, allowNonFinite: true)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        // Where each key of the objects being read starts and ends.
        var keys: [Int] = []
        reader.skipWhitespace()
        guard reader.copyCompact(into: &out, keys: &keys, level: 1) else { return nil }
        reader.skipWhitespace()
        return reader.index == bytes.count ? out : nil
    }

    /// Copies one value; false when it is not in the printers' form.
    private mutating func copyCompact(into out: inout [UInt8], keys: inout [Int], level: Int) -> Bool {
        guard level <= maxDepth, let byte = current else { return false }
        switch byte {
        case UInt8(ascii: "{"): return copyContainer(close: UInt8(ascii: "}"), into: &out, keys: &keys, level: level)
        case UInt8(ascii: "["): return copyContainer(close: UInt8(ascii: "]"), into: &out, keys: &keys, level: level)
        case UInt8(ascii: "\""): return copyString(into: &out) != nil
        case UInt8(ascii: "t"): return copyToken(into: &out) { try $0.expectLiteral("true") }
        case UInt8(ascii: "f"): return copyToken(into: &out) { try $0.expectLiteral("false") }
        case UInt8(ascii: "n"): return copyToken(into: &out) { try $0.expectLiteral("null") }
        case UInt8(ascii: "N") where allowNonFinite: return copyToken(into: &out) { try $0.expectLiteral("NaN") }
        case UInt8(ascii: "I") where allowNonFinite: return copyToken(into: &out) { try $0.expectLiteral("Infinity") }
        case UInt8(ascii: "-") where allowNonFinite && matches("-Infinity"):
            return copyToken(into: &out) { try $0.expectLiteral("-Infinity") }
        // Numbers keep their text, in the tree as here.
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return copyToken(into: &out) { try $0.skipNumber() }
        default: return false
        }
    }

    /// Moves past one literal or number with the parser's own scanner
    /// (`skip`) and copies the bytes it passed.
    private mutating func copyToken(
        into out: inout [UInt8], _ skip: (inout JSONParser) throws -> Void
    ) -> Bool {
        let start = index
        do { try skip(&self) } catch { return false }
        out.append(contentsOf: bytes[start..<index])
        return true
    }

    /// An object (`close` is `}`) or an array, with the compact separators.
    private mutating func copyContainer(close: UInt8, into out: inout [UInt8], keys: inout [Int], level: Int) -> Bool {
        let isObject = close == UInt8(ascii: "}")
        out.append(bytes[index])
        index += 1
        skipWhitespace()
        if current == close {
            out.append(close)
            index += 1
            return true
        }
        let firstKey = keys.count
        while true {
            if isObject {
                guard current == UInt8(ascii: "\""), keys.count - firstKey < 2 * Self.compactFormMemberLimit,
                    let key = copyString(into: &out), !isRepeated(key, keys[firstKey...])
                else { return false }
                keys.append(key.lowerBound)
                keys.append(key.upperBound)
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return false }
                index += 1
                out.append(UInt8(ascii: ":"))
                out.append(UInt8(ascii: " "))
                skipWhitespace()
            }
            guard copyCompact(into: &out, keys: &keys, level: level + 1) else { return false }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                out.append(UInt8(ascii: ","))
                out.append(UInt8(ascii: " "))
                skipWhitespace()
            case close:
                index += 1
                out.append(close)
                keys.removeLast(keys.count - firstKey)
                return true
            default:
                return false
            }
        }
    }

    /// Whether an earlier key of the object has the same bytes. In the
    /// printers' form each string has one spelling, so the same bytes are
    /// the same key, as the tree compares keys (by code point).
    private func isRepeated(_ key: Range<Int>, _ earlier: ArraySlice<Int>) -> Bool {
        var i = earlier.startIndex
        while i < earlier.endIndex {
            if earlier[i + 1] - earlier[i] == key.count, bytes[earlier[i]..<earlier[i + 1]].elementsEqual(bytes[key]) {
                return true
            }
            i += 2
        }
        return false
    }

    /// Copies a string spelled as `JSONPrinter.writeString` spells it, and
    /// returns where it lies, quotes included.
    private mutating func copyString(into out: inout [UInt8]) -> Range<Int>? {
        let start = index
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                out.append(contentsOf: bytes[start..<index])
                return start..<index
            case UInt8(ascii: "\\"):
                guard skipPrintedEscape() else { return nil }
            case 0x20...0x7E:
                index += 1
            default:
                // A control character, DEL or raw UTF-8: the printer escapes them.
                return nil
            }
        }
        return nil
    }

    /// Moves past an escape that the printer writes for the character it
    /// stands for: `\"` `\\` `\n` `\r` `\t` `\b` `\f`, or `\u` and four
    /// lowercase hex digits for any other character outside printable ASCII
    /// (a surrogate pair above U+FFFF). `\/`, `\u0041` or `\u00E9` are valid
    /// JSON but printed otherwise.
    private mutating func skipPrintedEscape() -> Bool {
        guard index + 1 < bytes.count else { return false }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"),
            UInt8(ascii: "t"), UInt8(ascii: "b"), UInt8(ascii: "f"):
            index += 2
            return true
        case UInt8(ascii: "u"):
            guard let unit = printedUnit(at: index + 2) else { return false }
            switch unit {
            case 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x20...0x7E, 0xDC00...0xDFFF:
                return false
            case 0xD800...0xDBFF:
                guard index + 8 <= bytes.count, bytes[index + 6] == UInt8(ascii: "\\"),
                    bytes[index + 7] == UInt8(ascii: "u"), let low = printedUnit(at: index + 8),
                    (0xDC00...0xDFFF).contains(low)
                else { return false }
                index += 12
            default:
                index += 6
            }
            return true
        default:
            return false
        }
    }

    /// The four lowercase hex digits at `offset`, as the printer writes them.
    private func printedUnit(at offset: Int) -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[offset..<offset + 4] {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt32(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }
}
