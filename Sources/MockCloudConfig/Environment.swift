import MockCloudSystem

/// The process environment (for the CGI programs: the meta-variables and
/// the settings nginx passes), looked up by name. The programs read it
/// directly (`getenv`), without building a dictionary of it: in a process
/// that lives for one request, that dictionary was a third of the work.
package struct Environment: Sendable, ExpressibleByDictionaryLiteral {
    private let lookup: @Sendable (String) -> String?
    private let repeats: @Sendable (String) -> Bool

    private init(lookup: @escaping @Sendable (String) -> String?, repeats: @escaping @Sendable (String) -> Bool) {
        self.lookup = lookup
        self.repeats = repeats
    }

    /// Fixed values, for tests and tools; `repeated` names the variables to
    /// report as given more than once.
    package init(_ values: [String: String], repeated: Set<String> = []) {
        lookup = { values[$0] }
        repeats = { repeated.contains($0) }
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements) { $1 })
    }

    /// This process's environment.
    /// (`withCString`: a String passed where C wants a pointer is copied into
    /// a new array each time. A long value is kept until exit: see `KeepUntilExit`.)
    package static let process = Environment(
        lookup: { name in Sys.environmentValue(name) },
        repeats: { name in Sys.environmentCount(name) > 1 })

    /// The value of `name`, e.g. `HTTP_X_USER_KEY`; the first, when the
    /// environment holds it more than once.
    package subscript(name: String) -> String? { lookup(name) }

    /// True when the environment holds `name` more than once. nginx 1.22
    /// passes a request header sent on two lines as two FastCGI parameters,
    /// and fcgiwrap puts both in the program's environment.
    package func isRepeated(_ name: String) -> Bool { repeats(name) }
}
