import MockCloudWire
/// What the inbox refuses, beyond the common request errors.
package enum InboxError: Error, CustomStringConvertible {
    case noMessage
    case lowerVersion(incoming: Int64, current: Envelope)
    case inboxFull(limit: Int)
    case malformedAnchor
    case anchorNotAnswerable(reason: String)
    case damagedLog(path: String)
    case damagedMessage(path: String)

    /// For the server log and the admin tool.
    package var description: String {
        switch self {
        case .noMessage: return "no such message"
        case .lowerVersion(let incoming, let current): return "version \(incoming) is lower than the stored \(current.version)"
        case .inboxFull(let limit): return "the inbox holds its limit of \(limit) messages"
        case .malformedAnchor: return "malformed anchor"
        case .anchorNotAnswerable(let reason): return reason
        case .damagedLog(let path): return "\(path): not a valid change log"
        case .damagedMessage(let path): return "\(path): not a valid message envelope"
        }
    }
}
