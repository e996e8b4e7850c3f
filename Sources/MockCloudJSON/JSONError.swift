/// Why a JSON text was refused.
package enum JSONError: Error, Equatable, CustomStringConvertible {
    /// Not JSON by RFC 8259 (or not UTF-8); `offset` is the byte where it went wrong.
    case invalid(offset: Int, reason: String)
    /// A value sits deeper than the limit allows (the top value is level 1).
    case tooDeep(limit: Int)

    package var description: String {
        switch self {
        case .invalid(let offset, let reason): return "\(reason) at byte \(offset)"
        case .tooDeep(let limit): return "JSON nested deeper than \(limit) levels"
        }
    }
}

extension JSONError {
    /// What the parser threw, as a `JSONError`: it throws nothing else (its
    /// functions are not typed-throws, so that the client built on it
    /// compiles against iOS 16's standard library, which cannot throw typed
    /// errors).
    package init(_ error: any Error) {
        self = error as? JSONError ?? .invalid(offset: 0, reason: "\(error)")
    }
}
