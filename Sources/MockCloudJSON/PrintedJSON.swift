/// A JSON value with its compact form (`JSONPrinter.compact`), printed once:
/// a message body is measured, compared with the stored one and spliced into
/// its envelope, and each of those would otherwise print it again.
package struct PrintedJSON: Sendable, Equatable {
    package let value: JSONValue
    /// `JSONPrinter.compact(value)`, always: only `init` sets it.
    package let compact: [UInt8]

    package init(_ value: JSONValue) {
        self.value = value
        compact = JSONPrinter.compact(value)
    }
}
