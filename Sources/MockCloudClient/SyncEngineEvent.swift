import Foundation
import MockCloudJSON
import MockCloudWire

extension SyncEngine {
    /// Something the engine did or found, as `events` hands it out.
    ///
    /// A struct, not an enum, so that a later release can add kinds without
    /// breaking an app's `switch` (as `ClientError`): switch over `kind`
    /// with a `default:`, and read the fields its documentation names; the
    /// others are empty.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        /// The kind of event. New kinds may be added in a minor release.
        public typealias Kind = ExtensibleKind<Event>

        public let kind: Kind
        public let ids: [MessageID]
        public let deletedIDs: [MessageID]
        public let refusals: [Refusal]
        public let members: [String]
        public let keptMembers: [String]
        public let settings: BoxSettings?
        public let error: ClientError?
        public let retryIn: Duration?
        public let resynced: Bool

        private init(
            _ kind: Kind, ids: [MessageID] = [], deletedIDs: [MessageID] = [], refusals: [Refusal] = [],
            members: [String] = [], keptMembers: [String] = [], settings: BoxSettings? = nil, error: ClientError? = nil,
            retryIn: Duration? = nil, resynced: Bool = false
        ) {
            self.kind = kind
            self.ids = ids
            self.deletedIDs = deletedIDs
            self.refusals = refusals
            self.members = members
            self.keptMembers = keptMembers
            self.settings = settings
            self.error = error
            self.retryIn = retryIn
            self.resynced = resynced
        }

        public static func uploaded(_ ids: [MessageID]) -> Event { Event(.uploaded, ids: ids) }
        public static func refused(_ refusals: [Refusal]) -> Event { Event(.refused, refusals: refusals) }
        public static func deferred(_ ids: [MessageID], error: ClientError, retryIn: Duration) -> Event {
            Event(.deferred, ids: ids, error: error, retryIn: retryIn)
        }
        public static func deferred(settings members: [String], error: ClientError, retryIn: Duration) -> Event {
            Event(.deferred, members: members, error: error, retryIn: retryIn)
        }
        public static func stopped(_ error: ClientError) -> Event { Event(.stopped, error: error) }
        public static func settingsMerged(_ members: [String], settings: BoxSettings, kept: [String]) -> Event {
            Event(.settingsMerged, members: members, keptMembers: kept, settings: settings)
        }
        public static func settingsRefused(_ members: [String], error: ClientError) -> Event {
            Event(.settingsRefused, members: members, error: error)
        }
        public static func boxSettings(_ settings: BoxSettings?) -> Event { Event(.boxSettings, settings: settings) }
        public static func applied(_ ids: [MessageID], deleted: [MessageID], resynced: Bool) -> Event {
            Event(.applied, ids: ids, deletedIDs: deleted, resynced: resynced)
        }
        public static func unreachable(_ error: ClientError, retryIn: Duration) -> Event {
            Event(.unreachable, error: error, retryIn: retryIn)
        }
        public static let reachable = Event(.reachable)

        public var description: String {
            func list(_ ids: [MessageID]) -> String {
                ids.prefix(5).map(\.rawValue).joined(separator: ", ") + (ids.count > 5 ? " and \(ids.count - 5) more" : "")
            }
            switch kind {
            case .uploaded: return "uploaded \(ids.count): \(list(ids))"
            case .refused: return "refused \(refusals.count): " + refusals.prefix(5).map(\.description).joined(separator: "; ")
            case .deferred:
                let what = ids.isEmpty ? "settings edits of \(members.joined(separator: ", "))" : "\(ids.count)"
                return "deferred \(what) for \(retryIn ?? .zero): \(error.map(\.description) ?? "")"
            case .stopped: return "stopped: \(error.map(\.description) ?? "")"
            case .settingsMerged:
                return "settings merged: \(members.joined(separator: ", "))"
                    + (keptMembers.isEmpty ? "" : " (the box's newer value kept for \(keptMembers.joined(separator: ", ")))")
            case .settingsRefused: return "settings edits of \(members.joined(separator: ", ")) refused: \(error.map(\.description) ?? "")"
            case .boxSettings: return "settings on the box: \(settings.map { "\($0.document)" } ?? "none")"
            case .applied:
                return "applied \(ids.count) changed, \(deletedIDs.count) deleted\(resynced ? " (a full read after 410)" : "")"
            case .unreachable: return "unreachable, retrying in \(retryIn ?? .zero): \(error.map(\.description) ?? "")"
            default: return kind.description
            }
        }
    }

    /// An upload that left the queue without being stored, and why.
    public struct Refusal: Sendable, Equatable, CustomStringConvertible {
        /// The change as it was handed to `enqueue`.
        public let item: UploadItem
        /// The status the box answered for it (409, 400, 413), or would
        /// have: a put older than one already queued for its id is 409
        /// without being sent.
        public let status: Int
        /// The box's sentence, or the engine's.
        public let reason: String
        /// 409: what the box holds (nil when it was refused before sending,
        /// and in a refusal read back from the state after a restart).
        public let current: Envelope?
        /// Its number in the engine's state: pass it to
        /// `acknowledgeRefusals` once the app has taken it (0: a refusal
        /// the app made itself).
        public let number: Int64

        public init(item: UploadItem, status: Int, reason: String, current: Envelope? = nil) {
            self.init(item: item, status: status, reason: reason, current: current, number: 0)
        }

        init(item: UploadItem, status: Int, reason: String, current: Envelope? = nil, number: Int64) {
            self.item = item
            self.status = status
            self.reason = reason
            self.current = current
            self.number = number
        }

        /// A kept upload refusal, as the app sees it; nil for a settings edit's.
        init?(_ refused: SyncQueue.Refused) {
            guard case .upload(let item) = refused.change else { return nil }
            self.init(item: item, status: refused.status, reason: refused.reason, number: refused.number)
        }

        public var description: String { "\(item.id) (\(status)): \(reason)" }
    }

    /// A settings edit the box refused (400, 409, 413), or that was older
    /// than the one queued for its members (409): kept until the app takes
    /// it (`acknowledgeRefusals`).
    public struct SettingsRefusal: Sendable, Equatable, CustomStringConvertible {
        /// Its number in the engine's state, for `acknowledgeRefusals`.
        public let number: Int64
        /// The members edited, with the values handed to `editSettings` (`null`: deleted).
        public let edit: JSONText
        /// When they were edited.
        public let editedAt: Date
        /// The box's status, or 409 for an edit older than the one queued.
        public let status: Int
        /// The box's sentence, or the engine's.
        public let reason: String

        /// The names of the members edited.
        public var members: [String] { edit.value.objectValue?.members.map(\.key) ?? [] }

        init?(_ refused: SyncQueue.Refused) {
            guard case .edit(let at, let members) = refused.change else { return nil }
            number = refused.number
            edit = JSONText(.object(JSONObject(members)))
            editedAt = BoxClient.date(at)
            status = refused.status
            reason = refused.reason
        }

        public var description: String { "settings edit of \(members.joined(separator: ", ")) (\(status)): \(reason)" }
    }

    /// What the box has not acknowledged yet.
    public struct Pending: Sendable, Equatable {
        /// The changes not yet acknowledged, in the order they were handed over
        /// (one per id: a later change replaced an earlier unsent one).
        public let uploads: [UploadItem]
        /// The settings members edited and not yet acknowledged, each with
        /// the time of its edit.
        public let settingsMembers: [String: Date]
        /// Uploads refused for good that the app has not taken yet
        /// (`acknowledgeRefusals`), oldest first.
        public let refusals: [Refusal]
        /// Settings edits refused for good that the app has not taken yet.
        public let settingsRefusals: [SettingsRefusal]

        /// Nothing left to send (refusals not taken may remain).
        public var isEmpty: Bool { uploads.isEmpty && settingsMembers.isEmpty }
    }
}

extension ExtensibleKind where Owner == SyncEngine.Event {
    /// The box acknowledged these uploads (`ids`): it holds them, or
    /// they are deleted. They left the queue.
    public static var uploaded: Self { Self("uploaded") }
    /// These uploads were refused (`refusals`, each with its status
    /// and the reason): 409, the box holds a newer version; 400; 413.
    /// They left the queue and are not sent again.
    public static var refused: Self { Self("refused") }
    /// The box could not take these uploads (`ids`) or settings edits
    /// (`members`) now: `error` says why (507: its storage is full; a
    /// 429 past its `Retry-After`; for settings, a document it cannot
    /// merge, or a box without the per-field merge). They stay queued
    /// and are sent again after `retryIn` (doubled each time, up to 10
    /// minutes), or at once after a new change, `syncNow()`, or the
    /// network's return.
    public static var deferred: Self { Self("deferred") }
    /// The box merged the settings edits of `members`: `settings` is
    /// what it holds now, `keptMembers` those of them whose value on
    /// the box won (edited later elsewhere). They left the queue.
    public static var settingsMerged: Self { Self("settingsMerged") }
    /// The box refused the settings edits of `members` (`error`, with
    /// its status). They left the queue and are not sent again.
    public static var settingsRefused: Self { Self("settingsRefused") }
    /// The settings on the box, as first read and after each change,
    /// this device's own merges included: `settings` (nil: they were
    /// deleted). While none are stored there is none of these.
    public static var boxSettings: Self { Self("boxSettings") }
    /// A page of the feed was applied to the store with its anchor:
    /// `ids` stored or replaced, `deletedIDs` removed; `resynced`
    /// when it began a full read after a 410.
    public static var applied: Self { Self("applied") }
    /// The box could not be reached through every retry (`error`), or
    /// a server there answered with a certificate the box's CA did not
    /// sign (`untrusted`: for a box on the LAN, another network).
    /// Everything queued is kept; the engine tries again after
    /// `retryIn`, or at once after `syncNow()`.
    public static var unreachable: Self { Self("unreachable") }
    /// `run()` (or `syncUntilIdle`) stopped for `error`, which no retry
    /// mends (401, 403: the token; a state it cannot write; what the
    /// store threw). The last event: `events` finishes after it.
    /// Everything queued is kept for a new engine.
    public static var stopped: Self { Self("stopped") }
    /// The box answered again after `unreachable`.
    public static var reachable: Self { Self("reachable") }
}
