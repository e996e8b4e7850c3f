/// Which of the two stores a file belongs to, by the one name that is its
/// folder in the data directory (`<data>/user_settings/`, `<data>/inbox/`),
/// the first part of its lock files' names
/// (`<data>/.locks/inbox.<key>.lock`) and part of every MAC (so a file moved
/// to the other store fails like an edit), as the Python mock cloud's
/// layout has it (docs/API.md §5).
package enum StoreName: Sendable, Equatable {
    /// The settings: one document per user key.
    case userSettings
    /// The inbox: messages and the change log per user key.
    case inbox

    /// `user_settings` or `inbox`.
    package var name: String {
        switch self {
        case .userSettings: return "user_settings"
        case .inbox: return "inbox"
        }
    }
}
