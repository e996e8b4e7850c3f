/// `application/x-www-form-urlencoded` query parameters, percent-decoded.
package struct QueryString: Sendable {
    /// Name and value pairs in their order in the query.
    package let pairs: [(name: String, value: String)]

    /// Parses a query; `nil` when an escape is malformed or not UTF-8.
    /// It works on the UTF-8 bytes: splitting a `String` by `Character`
    /// would cost more than the rest of a feed request.
    package init?(_ query: String) {
        var pairs: [(String, String)] = []
        for part in Array(query.utf8).split(separator: UInt8(ascii: "&")) {
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            guard let name = QueryString.decode(part[..<(equals ?? part.endIndex)]),
                let value = equals.map({ QueryString.decode(part[part.index(after: $0)...]) }) ?? ""
            else { return nil }
            pairs.append((name, value))
        }
        self.pairs = pairs
    }

    /// The first value given for `name`.
    package subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    static func decode(_ text: ArraySlice<UInt8>) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(ASCII.hexValue), let low = iterator.next().flatMap(ASCII.hexValue)
                else {
                    return nil
                }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
