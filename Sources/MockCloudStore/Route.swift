/// The two kinds of stored data. A route's name is its folder in the data
/// directory (`<data>/user_settings/`, `<data>/inbox/`), the first part of its
/// lock files' names (`<data>/.locks/inbox.<key>.lock`) and part of every MAC
/// (so a file moved to the other route fails like an edit): one name for all
/// three, as the Python mock cloud's layout has it (docs/API.md §5).
package enum Route: Sendable, Equatable {
    /// `/user/settings`: one document per user key.
    case userSettings
    /// `/inbox`: messages and the change log per user key.
    case inbox

    /// `user_settings` or `inbox`.
    package var name: String {
        switch self {
        case .userSettings: return "user_settings"
        case .inbox: return "inbox"
        }
    }
}
