/// Why a request may not go on, when bearer tokens are required.
package enum AccessError: HTTPResponseError, Equatable {
    case missingToken
    case tokenNotAccepted

    package var status: HTTPStatus { self == .missingToken ? .unauthorized : .forbidden }

    package var message: String {
        switch self {
        case .missingToken: return "Authorization: Bearer <token> required"
        case .tokenNotAccepted: return "bearer token not accepted"
        }
    }

    package var extraHeaders: [(String, String)] {
        self == .missingToken ? [("WWW-Authenticate", "Bearer realm=\"mockcloud\"")] : []
    }
}
