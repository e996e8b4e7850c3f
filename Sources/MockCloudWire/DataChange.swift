/// What a failed write did to the stored data: the `changed` member of a
/// write's 5xx answer (docs/API.md, "When a write fails"). The server says
/// it; the client reads it to tell a retry from a conflict.
package enum DataChange: String, Sendable {
    /// Nothing a reader can see changed: retrying is safe.
    case no
    /// The whole change is in place (it may not survive a power loss).
    case yes
    /// Each part of the change is in its old state or its new one: retrying
    /// the same request is safe and completes it.
    case maybe
}
