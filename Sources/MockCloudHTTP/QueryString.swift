import MockCloudJSON
import MockCloudSystem

/// `application/x-www-form-urlencoded` query parameters, percent-decoded.
package struct QueryString: Sendable {
    /// The names and the values, in their order in the query (two arrays of
    /// strings: an array of pairs costs a CGI process its own generic type).
    package let names: [String]
    package let values: [String]

    /// Parses a query; `nil` when an escape is malformed or not UTF-8.
    /// It works on the UTF-8 bytes: splitting a `String` by `Character`
    /// would cost more than the rest of a feed request. Empty parts
    /// (`a=1&&b=2`) are skipped.
    package init?(_ query: String) {
        var names: [String] = []
        var values: [String] = []
        let bytes = Array(query.utf8)
        var parts = ByteFields(bytes, 0..<bytes.count, separator: UInt8(ascii: "&"))
        while let part = parts.next() {
            let equals = bytes[part].firstIndex(of: UInt8(ascii: "="))
            guard let name = QueryString.decode(bytes[part.lowerBound..<(equals ?? part.upperBound)]),
                let value = equals.map({ QueryString.decode(bytes[($0 + 1)..<part.upperBound]) }) ?? ""
            else { return nil }
            names.append(name)
            values.append(value)
        }
        self.names = names
        self.values = values
    }

    /// The first value given for `name`.
    package subscript(name: String) -> String? {
        names.firstIndex(of: name).map { values[$0] }
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
        return ASCII.validUTF8(bytes)
    }
}
