import MockCloudJSON
import MockCloudWire

/// An error that knows its HTTP answer; the CGI edge alone turns it into
/// `Status:` + `{"error": message, ...extraMembers}`.
package protocol HTTPResponseError: Error {
    /// The status, e.g. 409.
    var status: HTTPStatus { get }
    /// The sentence for the `error` field: what went wrong and what to do.
    var message: String { get }
    /// Fields beside `error`, e.g. `current` on a 409.
    var extraMembers: [JSONMember] { get }
    /// Headers beside `Content-Type`, e.g. `Allow` on a 405.
    var extraHeaders: [(String, String)] { get }
    /// A line for stderr (nginx's error log), when the operator should know.
    var logDetail: String? { get }
    /// What a failed write did to the stored data, when the error knows;
    /// `nil`: the process's `WriteProgress` tells.
    var dataChange: DataChange? { get }
}

extension HTTPResponseError {
    package var extraMembers: [JSONMember] { [] }
    package var extraHeaders: [(String, String)] { [] }
    package var logDetail: String? { nil }
    package var dataChange: DataChange? { nil }
}
