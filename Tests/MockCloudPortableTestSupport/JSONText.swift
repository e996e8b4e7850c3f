import MockCloudJSON

/// Parses JSON text in a test; a parse failure is the test's failure.
package func json(_ text: String, allowNonFinite: Bool = false) throws -> JSONValue {
    try JSONParser.parse(Array(text.utf8), allowNonFinite: allowNonFinite)
}

/// `JSONPrinter.compact` as text.
package func compactText(_ value: JSONValue) -> String {
    String(decoding: JSONPrinter.compact(value), as: UTF8.self)
}

/// `JSONPrinter.pretty` as text.
package func prettyText(_ value: JSONValue) -> String {
    String(decoding: JSONPrinter.pretty(value), as: UTF8.self)
}
