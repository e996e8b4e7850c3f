import MockCloudJSON

/// What the inbox refuses, beyond the common request errors.
package enum InboxError: Error {
    case noMessage
    case lowerVersion(incoming: Int64, current: Envelope)
    case inboxFull(limit: Int)
    case malformedAnchor
    case anchorNotAnswerable(reason: String)
    case damagedLog(path: String)
    case damagedMessage(path: String)

    /// The sentence for the client.
    package var message: String {
        switch self {
        case .noMessage: return "no message with this id"
        case .lowerVersion(let incoming, let current):
            return "X-Sync-Version \(incoming) is lower than the stored version \(current.version); nothing was written"
        case .inboxFull(let limit):
            return "inbox full: this key already holds \(limit) messages; delete some first"
        case .malformedAnchor: return "malformed anchor: pass back exactly the anchor a previous page returned"
        case .anchorNotAnswerable(let reason): return "\(reason); restart without an anchor"
        case .damagedLog: return "the inbox's change log is damaged; see the server log"
        case .damagedMessage: return "a stored message is damaged; see the server log"
        }
    }

    /// Members of the error answer beside `error`: the stored message on a conflict.
    package var extraMembers: [JSONMember] {
        if case .lowerVersion(_, let current) = self { return [JSONMember("current", current.json)] }
        return []
    }

    /// A line for the server log, when the operator should look.
    package var logDetail: String? {
        switch self {
        case .damagedLog(let path): return "\(path): not a valid change log"
        case .damagedMessage(let path): return "\(path): not a valid message envelope"
        default: return nil
        }
    }
}
