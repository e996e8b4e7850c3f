/// `application/x-www-form-urlencoded` query parameters, percent-decoded.
package struct QueryString: Sendable {
    /// Name and value pairs in their order in the query.
    package let pairs: [(name: String, value: String)]

    /// Parses a query; `nil` when an escape is malformed or not UTF-8.
    package init?(_ query: String) {
        var pairs: [(String, String)] = []
        for part in query.split(separator: "&") where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = QueryString.decode(pieces[0]),
                let value = pieces.count > 1 ? QueryString.decode(pieces[1]) : ""
            else { return nil }
            pairs.append((name, value))
        }
        self.pairs = pairs
    }

    /// The first value given for `name`.
    package subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
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
