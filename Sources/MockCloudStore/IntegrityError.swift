/// A stored document that must not be served: its MAC does not verify, or
/// it is unsigned while signatures are required.
package struct IntegrityError: Error, Equatable, CustomStringConvertible {
    /// The file, for the server log.
    package let file: String
    /// Why, for the server log.
    package let reason: String

    package init(file: String, reason: String) {
        self.file = file
        self.reason = reason
    }

    /// The file and the reason, for the server log and the admin tool.
    package var description: String { "integrity check failed for \(file): \(reason)" }
}
