import MockCloudWire
/// A server-side fault: misconfiguration or an unexpected failure. The
/// client gets the sentence; stderr gets the detail.
package struct ServerError: HTTPResponseError {
    package let status: HTTPStatus
    package let message: String
    package let logDetail: String?
    /// A server error is found before anything is written.
    package var dataChange: DataChange? { .no }

    package init(status: HTTPStatus = .internalServerError, message: String, logDetail: String? = nil) {
        self.status = status
        self.message = message
        self.logDetail = logDetail
    }

    /// What a client learns of a configuration error: that there is one.
    /// Paths and settings are the operator's business, in the server log.
    package static let misconfiguredMessage = "server misconfigured; see the server log"
}
