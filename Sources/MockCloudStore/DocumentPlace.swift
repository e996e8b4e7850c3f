import MockCloudWire
/// Where a stored document belongs. The MAC covers this with the bytes, so a
/// file copied to another key, another id or another route fails like an edit.
package struct DocumentPlace: Sendable, Equatable {
    package let route: Route
    package let key: UserKey
    /// The message id; `nil` for settings.
    package let id: MessageID?
    /// What the file holds there: a document, or what is kept beside one.
    package let content: Content

    /// The files a place may hold.
    package enum Content: Sendable, Equatable {
        /// The document itself.
        case document
        /// A settings document's member times (`<key>.json.times`).
        case memberTimes
    }

    package init(route: Route, key: UserKey, id: MessageID? = nil, content: Content = .document) {
        self.route = route
        self.key = key
        self.id = id
        self.content = content
    }

    /// The name the MAC covers for the route: the route's own for a
    /// document, another for what lies beside it, so that neither verifies
    /// in the other's place.
    var domain: String {
        switch content {
        case .document: return route.name
        case .memberTimes: return route.name + "/member-times"
        }
    }
}
