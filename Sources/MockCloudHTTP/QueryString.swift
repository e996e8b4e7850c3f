import MockCloudJSON
import MockCloudSystem
import MockCloudWire

/// `application/x-www-form-urlencoded` query parameters, percent-decoded.
package struct QueryString: Sendable {
    /// A request's query, checked against the parameters its route and
    /// method take (`QueryParameters`): a malformed query, a name the route
    /// does not take, or one given twice is a 400 that says which and lists
    /// what the route takes. A typo (`since=` for `anchor=`) or a second
    /// `limit` would otherwise be silently ignored, and a read that meant to
    /// be small would read everything.
    package init(_ request: CGIRequest, takes allowed: [String]) throws(RequestError) {
        guard let query = QueryString(request.query) else { throw .malformedQuery }
        for i in query.names.indices {
            let name = query.names[i]
            guard allowed.contains(name) else {
                throw .unknownQueryParameter(name, request: "\(request.method) \(request.path)", takes: allowed)
            }
            if query.names[..<i].contains(name) {
                throw .repeatedQueryParameter(name, request: "\(request.method) \(request.path)", takes: allowed)
            }
        }
        self = query
    }

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

    /// `wait`, the seconds a read may be held for a change
    /// (`WireLimits.waitSeconds`); `nil` when absent.
    package func waitSeconds() throws(RequestError) -> Int? {
        guard let text = self[QueryParameters.wait] else { return nil }
        guard text.utf8.count <= 2, text.utf8.allSatisfy(ASCII.isDigit), let seconds = Int(text),
            WireLimits.waitSeconds.contains(seconds)
        else { throw .invalidWait(text) }
        return seconds
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
