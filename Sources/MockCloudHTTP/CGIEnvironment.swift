import Glibc
import MockCloudSystem

/// CGI meta-variables, looked up by name. The programs read the process
/// environment directly (`getenv`), without building a dictionary of it: in a
/// process that lives for one request, that dictionary was a third of the work.
package struct CGIEnvironment: Sendable, ExpressibleByDictionaryLiteral {
    private let lookup: @Sendable (String) -> String?

    private init(lookup: @escaping @Sendable (String) -> String?) {
        self.lookup = lookup
    }

    /// Fixed values, for tests and tools.
    package init(_ values: [String: String]) {
        lookup = { values[$0] }
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements) { $1 })
    }

    /// This process's environment.
    /// (`withCString`: a String passed where C wants a pointer is copied into
    /// a new array each time. A long value is kept until exit: see `KeepUntilExit`.)
    package static let process = CGIEnvironment { name in
        name.withCString { getenv($0) }.map { KeepUntilExit.keep(String(cString: $0)) }
    }

    /// The value of `name`, e.g. `HTTP_X_USER_KEY`.
    package subscript(name: String) -> String? { lookup(name) }

    /// The same values with some replaced (tests and tools).
    package func overriding(_ values: [String: String]) -> CGIEnvironment {
        let base = lookup
        return CGIEnvironment { name in values[name] ?? base(name) }
    }
}
