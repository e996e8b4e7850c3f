/// What is wrong with an inbox request's own fields.
package enum InboxRequestError: HTTPResponseError, Equatable {
    case invalidMessageID
    case invalidSyncVersion(String)
    case invalidDeviceID
    case invalidLimit(String)
    case invalidExcludeSource

    package var status: HTTPStatus { .badRequest }

    package var message: String {
        switch self {
        case .invalidMessageID: return "invalid message id: must match ^[A-Za-z0-9._:-]{1,200}$"
        case .invalidSyncVersion(let text):
            return "invalid X-Sync-Version \(String(reflecting: text)): must be a non-negative integer"
        case .invalidDeviceID: return "invalid X-Device-Id shape"
        case .invalidLimit(let text): return "invalid limit \(String(reflecting: text)): must be an integer from 1 to 1000"
        case .invalidExcludeSource: return "invalid exclude-source shape"
        }
    }
}
