import Foundation
import MockCloudJSON
import MockCloudWire

/// What `reconcileSettings(local:)` found at launch and did: the four cases
/// of an app's settings store, the one where both already agree, and the
/// per-field merge.
///
/// A struct, not an enum, so that a later release can add a kind without
/// breaking an app's `switch`: switch over `kind` with a `default`.
/// Equality compares every property, so `result == .boxIsNewer(settings)`
/// reads as the case did.
public struct SettingsReconciliation: Sendable, Equatable, CustomStringConvertible {
    /// Which case it was. New kinds may be added in a minor release.
    public typealias Kind = ExtensibleKind<SettingsReconciliation>

    public let kind: Kind
    /// What the box holds now; nil for `unreachable`.
    public let settings: BoxSettings?
    /// For `mergedPerField`: the edited members whose value on the box won.
    public let kept: [String]
    /// For `unreachable`: why.
    public let error: ClientError?

    private init(_ kind: Kind, _ settings: BoxSettings?, kept: [String] = [], error: ClientError? = nil) {
        self.kind = kind
        self.settings = settings
        self.kept = kept
        self.error = error
    }

    public static func createdOnBox(_ settings: BoxSettings) -> Self { Self(.createdOnBox, settings) }
    public static func unreachable(_ error: ClientError) -> Self { Self(.unreachable, nil, error: error) }
    public static func boxIsNewer(_ settings: BoxSettings) -> Self { Self(.boxIsNewer, settings) }
    public static func pushedLocal(_ settings: BoxSettings) -> Self { Self(.pushedLocal, settings) }
    public static func inSync(_ settings: BoxSettings) -> Self { Self(.inSync, settings) }
    public static func mergedPerField(_ settings: BoxSettings, kept: [String]) -> Self {
        Self(.mergedPerField, settings, kept: kept)
    }

    /// The box's document when the app should apply it locally
    /// (`boxIsNewer`, `mergedPerField`); nil when the local copy stands.
    public var documentToApply: JSONText? {
        kind == .boxIsNewer || kind == .mergedPerField ? settings?.document : nil
    }

    public var description: String {
        if let error { return "\(kind): \(error)" }
        return kept.isEmpty ? "\(kind)" : "\(kind), kept on the box: \(kept.joined(separator: ", "))"
    }
}

extension ExtensibleKind where Owner == SettingsReconciliation {
    /// Nothing was stored on the box (404): the local copy was stored there.
    public static var createdOnBox: Self { Self("createdOnBox") }

    /// The box could not be reached, or its settings kept changing
    /// while this ran: keep the local copy (and the edits) and try later.
    public static var unreachable: Self { Self("unreachable") }

    /// The box's `updatedAt` is newer (or nothing is held locally):
    /// apply its document locally.
    public static var boxIsNewer: Self { Self("boxIsNewer") }

    /// The local `updatedAt` is newer: it was pushed, and the box holds it.
    public static var pushedLocal: Self { Self("pushedLocal") }

    /// Both hold the same `updatedAt`: nothing to do.
    public static var inSync: Self { Self("inSync") }

    /// The box keeps member times and `editedFields` were given: each
    /// edited member was sent with its own edit time and merged per
    /// field. `settings` is what the box holds now, to apply locally;
    /// `kept` the edited members whose box value won (edited later
    /// elsewhere).
    public static var mergedPerField: Self { Self("mergedPerField") }
}

extension BoxClient {
    /// Reconciles the app's settings with the box's at launch, by
    /// `updatedAt` (last writer wins, as the server judges it):
    /// - nothing stored on the box: `local` is stored (`createdOnBox`);
    /// - the box unreachable after the retries: `unreachable`, keep `local`;
    /// - the box's document newer, or nothing local: `boxIsNewer`, apply it;
    /// - `local` newer: pushed with `If-Match` (`pushedLocal`); a write
    ///   that landed meanwhile is judged again, so nothing newer is lost;
    /// - the same `updatedAt`: `inSync`.
    /// A document without a parseable `updatedAt` is older than any that
    /// has one. Throws only what a retry cannot mend (an untrusted server,
    /// a refused key or token, an answer it does not understand).
    public func reconcileSettings(local: JSONText?) async throws -> SettingsReconciliation {
        try await reconcileSettings(local: local, editedFields: nil)
    }

    /// The same reconciliation, per field when the box keeps member times:
    /// `editedFields` names the top-level members of `local` edited on this
    /// device since the last reconciliation, each with the time of its edit
    /// (a member edited away from `local` is a deletion). Each is sent with
    /// its own time (`patchSettings(fields:editedAt:)`, one request per
    /// instant) and the result is `mergedPerField`: two devices that edited
    /// different members offline both keep their edit. Nothing edited: the
    /// box's document is `inSync` or `boxIsNewer`. Nothing stored on the
    /// box, or a box without member times: `reconcileSettings(local:)`'s
    /// whole-document cases. Clear `editedFields` once this returns
    /// anything but `unreachable`; after `unreachable`, keep them: sending
    /// the same edits again changes nothing that landed.
    public func reconcileSettings(local: JSONText?, editedFields: [String: Date]?) async throws -> SettingsReconciliation {
        do {
            if let editedFields, let local, let timed = try await settingsWithTimes(), timed.times != nil {
                return try await mergePerField(local, editedFields, over: timed.settings)
            }
            return try await reconcileWholeDocument(local)
        } catch let error as ClientError where error.code == .unavailable {
            // Whatever step found the box away: what landed stays landed,
            // and the same edits sent again change nothing.
            return .unreachable(error)
        }
    }

    /// `editedFields`' members of `local`, sent per field, oldest edit first.
    private func mergePerField(
        _ local: JSONText, _ editedFields: [String: Date], over stored: BoxSettings
    ) async throws -> SettingsReconciliation {
        guard case .object(let document) = local.value else {
            throw ClientError.invalidArgument("the local settings are not a JSON object")
        }
        if editedFields.keys.allSatisfy({ $0 == "updatedAt" || $0 == "serverReceivedAt" }) {
            return Self.reflects(stored.document, .put, local) ? .inSync(stored) : .boxIsNewer(stored)
        }
        var now = stored
        var kept: [String] = []
        // `updatedAt` and `serverReceivedAt` are no members of their own.
        let edits = editedFields.filter { $0.key != "updatedAt" && $0.key != "serverReceivedAt" }
        let byInstant = Dictionary(grouping: edits) { Self.micros($0.value) }
        for instant in byInstant.keys.sorted() {
            var fields = JSONObject()
            for (name, _) in byInstant[instant]!.sorted(by: { $0.key < $1.key }) {
                fields[name] = document[name] ?? .null
            }
            let merged = try await patchSettings(fields: JSONText(.object(fields)), editedAt: Self.date(instant))
            now = merged.settings
            kept += merged.kept
        }
        return .mergedPerField(now, kept: kept)
    }

    /// The whole-document cases, by `updatedAt`.
    private func reconcileWholeDocument(_ local: JSONText?) async throws -> SettingsReconciliation {
        for _ in 0..<configuration.retry.maxAttempts {
            let stored = try await settings()
            guard let local else {
                if let stored { return .boxIsNewer(stored) }
                throw ClientError.invalidArgument("nothing to reconcile: no local settings and none on the box")
            }
            let write: SettingsWrite
            if let stored {
                let (mine, theirs) = (Self.updatedAt(local), Self.updatedAt(stored.document))
                if mine == theirs { return .inSync(stored) }
                if (mine ?? .min) < (theirs ?? .min) { return .boxIsNewer(stored) }
                guard let etag = stored.etag else { throw ClientError.badAnswer("settings without an ETag") }
                write = try await putSettings(local, ifMatch: etag)
            } else {
                write = try await createSettings(local)
            }
            switch write {
            case .written(let settings): return stored == nil ? .createdOnBox(settings) : .pushedLocal(settings)
            case .conflict:
                continue  // another device wrote meanwhile: judge again against what it stored
            }
        }
        throw ClientError.unavailable("the settings kept changing on the box while reconciling")
    }

    /// `PUT` with `If-None-Match: *`: stored only if nothing is.
    func createSettings(_ document: JSONText) async throws -> SettingsWrite {
        try await writeSettings(.put, document, condition: .ifNoneMatch("*"))
    }

    /// The instant of a document's `updatedAt`; nil without a parseable one.
    static func updatedAt(_ document: JSONText) -> Timestamp.Micros? {
        guard case .string(let text)? = document.value.objectValue?["updatedAt"] else { return nil }
        return Timestamp.parse(text)
    }
}
