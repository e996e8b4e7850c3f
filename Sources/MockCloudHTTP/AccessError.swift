import MockCloudWire

/// Why a request may not go on, when bearer tokens are required.
package enum AccessError: HTTPResponseError, Equatable {
    case missingToken
    case tokenNotAccepted
    /// A valid token limited to other user keys (`mockcloud-admin token --keys`).
    case keyNotAllowed

    package var status: HTTPStatus { self == .missingToken ? .unauthorized : .forbidden }

    package var message: String {
        switch self {
        case .missingToken: return "Authorization: Bearer <token> required"
        case .tokenNotAccepted: return "bearer token not accepted"
        case .keyNotAllowed: return "this token may not use this X-User-Key"
        }
    }

    package var extraHeaders: [(String, String)] {
        self == .missingToken ? [(HTTPHeader.wwwAuthenticate.name, "Bearer realm=\"mockcloud\"")] : []
    }
}
