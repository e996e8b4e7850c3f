@testable import MockCloudHTTP
@testable import MockCloudJSON
@testable import MockCloudStore
@testable import MockCloudSystem

// The strict JSON parser and the Python-compatible printer.
//
// Input: a JSON text. Oracles:
// - the route parser (64 levels, strict) and the stored-file parser (1000
//   levels, NaN/Infinity) agree wherever both apply;
// - whatever parses prints (compact and pretty) to ASCII that parses back to
//   an equal value and prints to the same bytes again;
// - an error's offset lies inside the input;
// - the tree has the shape an independent scan of the text gives, with
//   object keys compared as Python compares them (by code point, so `é` and
//   `e\u0301` are two keys) and a repeated key keeping its first position
//   and its last value.
// - the stored-document compactor (`compactForm(ofStored:)`) answers only
//   texts the stored-file parser accepts, with the bytes the compact printer
//   writes for them, and does answer the pretty form the printers store
//   (within its 64 levels and 64 members an object).
// When the input holds a 0xFF byte (never part of valid JSON), the two sides
// of the first one are also parsed as a merge-patch target and a patch:
// `merging(patch:)` must match RFC 7396's pseudo-code (keys compared by code
// point) and be idempotent. `FUZZ_SKIP=key-equivalence` compares keys as
// Swift's String does (canonical equivalence) instead.

/// Keys compare as Python's do, by code point, unless that finding is skipped.
private let keysByCodePoint = !skipping("key-equivalence")

private func sameKey(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    keysByCodePoint ? a == b : String(decoding: a, as: UTF8.self) == String(decoding: b, as: UTF8.self)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    let strict = parse(bytes, lenient: false)
    let lenient = parse(bytes, lenient: true)
    if case .success(let value) = lenient {
        var scanner = Skeleton.Scanner(bytes)
        let expected = scanner.value(level: 1)
        require(Skeleton(value) == expected, "the tree of \(show(bytes)) is \(Skeleton(value)), a scan says \(expected)")
        checkRoundTrip(value, lenient: true)
        if scanner.maxLevel <= JSONParser.defaultMaxDepth && largestObject(value) <= JSONParser.compactFormMemberLimit {
            let stored = JSONPrinter.pretty(value)
            require(JSONParser.compactForm(ofStored: stored) == JSONPrinter.compact(value),
                    "the compactor does not answer the stored form \(show(stored)) as the printer does")
        }
        switch strict {
        case .success(let value):
            require(lenient == strict, "the stored-file parser disagrees with the route parser on \(show(bytes))")
            checkRoundTrip(value, lenient: false)
        case .failure(.tooDeep):
            require(scanner.maxLevel > JSONParser.defaultMaxDepth,
                    "\(show(bytes)) is only \(scanner.maxLevel) levels deep, yet the route parser says too deep")
        case .failure(.invalid(let offset, let reason)):
            let rest = bytes[offset...]
            require(rest.starts(with: Array("NaN".utf8)) || rest.starts(with: Array("Infinity".utf8)),
                    "only the stored-file parser accepts \(show(bytes)); the route parser says \(reason) at \(offset)")
        }
    } else if case .success = strict {
        require(false, "only the route parser accepts \(show(bytes))")
    }
    if let compacted = JSONParser.compactForm(ofStored: bytes) {
        if case .success(let value) = lenient {
            require(compacted == JSONPrinter.compact(value),
                    "the compactor gives \(show(compacted)) for \(show(bytes)), the printer \(show(JSONPrinter.compact(value)))")
        } else {
            require(false, "the compactor answers \(show(bytes)), which the stored-file parser refuses")
        }
    }
    if let cut = bytes.firstIndex(of: 0xFF),
        case .success(let target) = parse(Array(bytes[..<cut]), lenient: true),
        case .success(let patch) = parse(Array(bytes[(cut + 1)...]), lenient: true)
    {
        checkMerge(target, patch)
    }
    return 0
}

private func parse(_ bytes: [UInt8], lenient: Bool) -> Result<JSONValue, JSONError> {
    do {
        return .success(lenient
            ? try JSONParser.parse(bytes, maxDepth: JSONParser.storedDocumentMaxDepth, allowNonFinite: true)
            : try JSONParser.parse(bytes))
    } catch {
        require(error is JSONError, "the parser threw \(error), not a JSONError")
        let error = JSONError(error)
        if case .invalid(let offset, _) = error {
            require(offset >= 0 && offset <= bytes.count, "error offset \(offset) outside \(bytes.count) bytes")
        }
        return .failure(error)
    }
}

private func checkRoundTrip(_ value: JSONValue, lenient: Bool) {
    for (name, print) in [("compact", JSONPrinter.compact), ("pretty", JSONPrinter.pretty)] {
        let text = print(value)
        require(text.allSatisfy { $0 < 0x80 }, "\(name) output is not ASCII: \(show(text))")
        guard case .success(let again) = parse(text, lenient: lenient) else {
            require(false, "\(name) output does not parse: \(show(text))")
            return
        }
        require(again == value, "\(name) output parses to another value: \(show(text))")
        let twice = print(again)
        require(twice == text, "\(name) output is not stable: \(show(text)) then \(show(twice))")
    }
}

/// The most members any object in `value` has.
private func largestObject(_ value: JSONValue) -> Int {
    switch value {
    case .array(let elements): return elements.map(largestObject).max() ?? 0
    case .object(let object): return max(object.count, object.members.map { largestObject($0.value) }.max() ?? 0)
    default: return 0
    }
}

/// RFC 7396 section 2's MergePatch, with the member order the contract asks
/// for: replaced members stay in place, new ones are appended in patch order.
private func referenceMerge(_ target: JSONValue, _ patch: JSONValue) -> JSONValue {
    guard case .object(let patchObject) = patch else { return patch }
    var members = target.objectValue?.members ?? []
    for member in patchObject.members {
        let index = members.firstIndex { sameKey(Array($0.key.utf8), Array(member.key.utf8)) }
        if member.value == .null {
            if let index { members.remove(at: index) }
        } else if let index {
            members[index].value = referenceMerge(members[index].value, member.value)
        } else {
            members.append(JSONMember(member.key, referenceMerge(.null, member.value)))
        }
    }
    return .object(JSONObject(uniqueMembers: members))
}

private func checkMerge(_ target: JSONValue, _ patch: JSONValue) {
    let merged = target.merging(patch: patch)
    let expected = referenceMerge(target, patch)
    let text = JSONPrinter.compact(merged)
    require(text == JSONPrinter.compact(expected),
            "merge differs from RFC 7396: target \(show(JSONPrinter.compact(target))) patch \(show(JSONPrinter.compact(patch))) "
            + "gave \(show(text)), expected \(show(JSONPrinter.compact(expected)))")
    let again = JSONPrinter.compact(merged.merging(patch: patch))
    require(again == text, "merge is not idempotent: \(show(text)) then \(show(again))")
}

/// The shape of a JSON value with keys as UTF-8 bytes: what the parser must
/// build, found by a scanner that shares no code with it. It runs only on
/// texts the parser accepted, so it skips numbers and literals unchecked.
private indirect enum Skeleton: Equatable, CustomStringConvertible {
    case leaf
    case array([Skeleton])
    case object([(key: [UInt8], value: Skeleton)])

    init(_ value: JSONValue) {
        switch value {
        case .array(let elements): self = .array(elements.map(Skeleton.init))
        case .object(let object): self = .object(object.members.map { (Array($0.key.utf8), Skeleton($0.value)) })
        default: self = .leaf
        }
    }

    static func == (a: Skeleton, b: Skeleton) -> Bool {
        switch (a, b) {
        case (.leaf, .leaf): return true
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameKey($0.key, $1.key) && $0.value == $1.value }
        default: return false
        }
    }

    var description: String {
        switch self {
        case .leaf: return "_"
        case .array(let elements): return "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .object(let members):
            return "{" + members.map { show($0.key) + ": " + $0.value.description }.joined(separator: ", ") + "}"
        }
    }

    struct Scanner {
        let bytes: [UInt8]
        var index = 0
        /// The deepest value seen, counted as the parser counts (the top value is level 1).
        var maxLevel = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(level: Int) -> Skeleton {
            maxLevel = max(maxLevel, level)
            skipSpace()
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [(key: [UInt8], value: Skeleton)] = []
                while true {
                    skipSpace()
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; skipSpace() }
                    let key = string()
                    skipSpace()
                    index += 1 // ':'
                    let member = value(level: level + 1)
                    if let at = members.firstIndex(where: { sameKey($0.key, key) }) {
                        members[at].value = member
                    } else {
                        members.append((key, member))
                    }
                }
            case UInt8(ascii: "["):
                index += 1
                var elements: [Skeleton] = []
                while true {
                    skipSpace()
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                    if bytes[index] == UInt8(ascii: ",") { index += 1 }
                    elements.append(value(level: level + 1))
                }
            case UInt8(ascii: "\""):
                _ = string()
                return .leaf
            default:
                while index < bytes.count, !Array(",]} \t\r\n".utf8).contains(bytes[index]) { index += 1 }
                return .leaf
            }
        }

        /// A string's content as UTF-8, escapes decoded.
        mutating func string() -> [UInt8] {
            index += 1
            var out: [UInt8] = []
            while bytes[index] != UInt8(ascii: "\"") {
                guard bytes[index] == UInt8(ascii: "\\") else {
                    out.append(bytes[index])
                    index += 1
                    continue
                }
                let escape = bytes[index + 1]
                index += 2
                switch escape {
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var unit = hex4()
                    if (0xD800..<0xDC00).contains(unit) {
                        index += 2 // the "\\u" of the low half
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (hex4() - 0xDC00)
                    }
                    out.append(contentsOf: Array(String(Character(Unicode.Scalar(unit)!)).utf8))
                default: out.append(escape) // " \\ /
                }
            }
            index += 1
            return out
        }

        mutating func hex4() -> UInt32 {
            let text = String(decoding: bytes[index..<index + 4], as: UTF8.self)
            index += 4
            return UInt32(text, radix: 16)!
        }
    }
}
