import MockCloudWire
/// Where a stored document belongs. The MAC covers this with the bytes, so a
/// file copied to another key, another id or another store fails like an edit.
package struct DocumentPlace: Sendable, Equatable {
    package let store: StoreName
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

    package init(store: StoreName, key: UserKey, id: MessageID? = nil, content: Content = .document) {
        self.store = store
        self.key = key
        self.id = id
        self.content = content
    }

    /// The name the MAC covers for the store: the store's own for a
    /// document, another for what lies beside it, so that neither verifies
    /// in the other's place.
    var domain: String {
        switch content {
        case .document: return store.name
        case .memberTimes: return store.name + "/member-times"
        }
    }
}
