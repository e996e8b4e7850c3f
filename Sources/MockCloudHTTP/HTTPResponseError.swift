import MockCloudJSON

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

/// What a failed write did to the stored data: the `changed` member of a
/// write's 5xx answer (docs/API.md, "When a write fails").
package enum DataChange: String, Sendable {
    /// Nothing a reader can see changed: retrying is safe.
    case no
    /// The whole change is in place (it may not survive a power loss).
    case yes
    /// Each part of the change is in its old state or its new one: retrying
    /// the same request is safe and completes it.
    case maybe
}

extension HTTPResponseError {
    package var extraMembers: [JSONMember] { [] }
    package var extraHeaders: [(String, String)] { [] }
    package var logDetail: String? { nil }
    package var dataChange: DataChange? { nil }
}
