/// A server-side fault: misconfiguration or an unexpected failure. The
/// client gets the sentence; stderr gets the detail.
package struct ServerError: HTTPResponseError {
    package let status: HTTPStatus
    package let message: String
    package let logDetail: String?

    package init(status: HTTPStatus = .internalServerError, message: String, logDetail: String? = nil) {
        self.status = status
        self.message = message
        self.logDetail = logDetail
    }
}
