import Foundation
import MockCloudJSON
import MockCloudWire

/// One top-level member's last edit on the box (docs/API.md §3, "Per-field merge").
public struct MemberTime: Sendable, Equatable {
    public var editedAt: Date
    /// The `X-Device-Id` of the edit; nil when it named none (a plain write).
    public var device: DeviceID?
    /// The edit deleted the member.
    public var deleted: Bool

    public init(editedAt: Date, device: DeviceID? = nil, deleted: Bool = false) {
        self.editedAt = editedAt
        self.device = device
        self.deleted = deleted
    }
}

/// The box's settings with the time of each member.
public struct TimedSettings: Sendable, Equatable {
    public var settings: BoxSettings
    /// Each member's last edit, deletions included; a member without a time
    /// (its document had no parseable `updatedAt`) is absent. nil when the
    /// box keeps no member times (a MockCloud without the per-field merge).
    public var times: [String: MemberTime]?

    public init(settings: BoxSettings, times: [String: MemberTime]?) {
        self.settings = settings
        self.times = times
    }
}

/// What a per-field PATCH stored.
public struct FieldMerge: Sendable, Equatable {
    /// What the box holds now (every member, the ones not sent included).
    public var settings: BoxSettings
    /// The members sent whose value on the box won (its edit there is
    /// newer): their value in `settings` is the one to keep.
    public var kept: [String]

    public init(settings: BoxSettings, kept: [String]) {
        self.settings = settings
        self.kept = kept
    }
}

extension BoxClient {
    /// The stored settings with each member's edit time (`GET` with
    /// `X-Merge: fields`); nil when none are stored. A box without the
    /// per-field merge answers the document alone: `times` is then nil.
    public func settingsWithTimes() async throws -> TimedSettings? {
        let request = TransportRequest(.get, Endpoint.settings.path, headers: [(HTTPHeader.merge.name, HeaderValue.mergeFields)])
        let response = try await exchange(request, .safe)
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw Self.refusal(response) }
        let plain = BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header(HTTPHeader.etag.name))
        guard Self.mergedPerField(response) else { return TimedSettings(settings: plain, times: nil) }
        let timed: TimedDocument
        do {
            timed = try TimedDocument(json: .object(try Self.object(response)))
        } catch let error as WireFormatError {
            throw ClientError.badAnswer(error.description)
        }
        var times: [String: MemberTime] = [:]
        for (name, edit) in timed.times.edits {
            times[name.text] = MemberTime(editedAt: Self.date(edit.at), device: edit.device, deleted: edit.deleted)
        }
        return TimedSettings(settings: BoxSettings(document: JSONText(timed.document), etag: plain.etag), times: times)
    }

    /// Sends one device's edits of some top-level members, all made at
    /// `editedAt`, as a per-field merge (`PATCH` with `X-Merge: fields`):
    /// each member is applied on the box when this edit is newer than the
    /// one the box holds for it (ties: `X-Device-Id`, then the value), so
    /// two devices that edited different members both keep their edit.
    /// `fields` holds the edited members with their whole new values
    /// (`null`: deleted) and no `updatedAt`: `editedAt` is sent as it.
    /// Sent again when its answer is lost: the same edit changes nothing.
    /// Throws `.badAnswer` when the box merged the whole document instead
    /// (a MockCloud without the per-field merge, which applied it as a
    /// plain merge patch).
    public func patchSettings(fields: JSONText, editedAt: Date) async throws -> FieldMerge {
        guard case .object(var object) = fields.value else {
            throw ClientError.invalidArgument("fields must be a JSON object of the members edited")
        }
        guard object["updatedAt"] == nil else {
            throw ClientError.invalidArgument("fields holds updatedAt: pass the time of the edits as editedAt")
        }
        object["updatedAt"] = .string(Timestamp.format(Self.micros(editedAt)))
        let request = TransportRequest(
            .patch, Endpoint.settings.path,
            headers: [(HTTPHeader.contentType.name, HeaderValue.mergePatch), (HTTPHeader.merge.name, HeaderValue.mergeFields)],
            body: JSONText(.object(object)).bytes)
        let response = try await exchange(request, .safe)
        guard response.status == 200 else { throw Self.refusal(response) }
        guard Self.mergedPerField(response) else {
            throw ClientError.badAnswer("the box merged the whole document, not per field: it is a MockCloud without X-Merge")
        }
        let settings = BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header(HTTPHeader.etag.name))
        guard let header = response.header(HTTPHeader.mergeKept.name) else { return FieldMerge(settings: settings, kept: []) }
        let listed: MergeKept
        do {
            listed = try MergeKept(header: header)
        } catch let error as WireFormatError {
            throw ClientError.badAnswer(error.description)
        }
        if listed.isComplete { return FieldMerge(settings: settings, kept: listed.names) }
        // The list was too long for a header: the times say which edits did not land.
        let edit = MemberTime(editedAt: Self.date(Self.micros(editedAt)), device: configuration.deviceID)
        let times = try await settingsWithTimes()?.times ?? [:]
        let kept = object.members.map(\.key).filter { name in
            MemberTimes.isEditable(name) && times[name].map { $0.editedAt != edit.editedAt || $0.device != edit.device } ?? true
        }
        return FieldMerge(settings: settings, kept: kept)
    }

    /// True when the answer says the box merged or read per field (`X-Merge:
    /// fields`); a box without the per-field merge ignores the request's.
    static func mergedPerField(_ response: TransportResponse) -> Bool {
        response.header(HTTPHeader.merge.name) == HeaderValue.mergeFields
    }

    /// An instant as the wire's microseconds, and back.
    package static func micros(_ date: Date) -> Timestamp.Micros { Timestamp.Micros((date.timeIntervalSince1970 * 1_000_000).rounded()) }
    package static func date(_ micros: Timestamp.Micros) -> Date { Date(timeIntervalSince1970: Double(micros) / 1_000_000) }
}
