import MockCloudWire
/// Where a stored document belongs. The MAC covers this with the bytes, so a
/// file copied to another key, another id or another route fails like an edit.
package struct DocumentPlace: Sendable, Equatable {
    package let route: Route
    package let key: UserKey
    /// The message id; `nil` for settings.
    package let id: MessageID?

    package init(route: Route, key: UserKey, id: MessageID? = nil) {
        self.route = route
        self.key = key
        self.id = id
    }
}
