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
        let request = TransportRequest(method: "GET", target: "/user/settings", headers: [("X-Merge", "fields")])
        let response = try await exchange(request, .safe)
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw Self.refusal(response) }
        let plain = BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header("etag"))
        guard response.header("x-merge") == "fields" else { return TimedSettings(settings: plain, times: nil) }
        let object = try Self.object(response)
        guard case .object(let document)? = object["document"], case .object(let times)? = object["times"] else {
            throw ClientError.badAnswer("settings with member times without their document or times")
        }
        var parsed: [String: MemberTime] = [:]
        for member in times.members {
            guard case .object(let fields) = member.value, let text = fields["at"]?.stringValue,
                let at = Timestamp.parse(text)
            else { throw ClientError.badAnswer("the time of member \(String(reflecting: member.key)) is not one") }
            parsed[member.key] = MemberTime(
                editedAt: Self.date(at), device: fields["device"]?.stringValue.flatMap(DeviceID.init),
                deleted: fields["deleted"] == .bool(true))
        }
        return TimedSettings(settings: BoxSettings(document: JSONText(.object(document)), etag: plain.etag), times: parsed)
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
            method: "PATCH", target: "/user/settings",
            headers: [("Content-Type", "application/merge-patch+json"), ("X-Merge", "fields")],
            body: JSONText(.object(object)).bytes)
        let response = try await exchange(request, .safe)
        guard response.status == 200 else { throw Self.refusal(response) }
        guard response.header("x-merge") == "fields" else {
            throw ClientError.badAnswer("the box merged the whole document, not per field: it is a MockCloud without X-Merge")
        }
        let settings = BoxSettings(document: try JSONText(validatingAnswer: response), etag: response.header("etag"))
        guard let header = response.header("x-merge-kept") else { return FieldMerge(settings: settings, kept: []) }
        let (listed, complete) = try Self.keptMembers(header)
        if complete { return FieldMerge(settings: settings, kept: listed) }
        // The list was too long for a header: the times say which edits did not land.
        let edit = MemberTime(editedAt: Self.date(Self.micros(editedAt)), device: configuration.deviceID)
        let times = try await settingsWithTimes()?.times ?? [:]
        let kept = object.members.map(\.key).filter { name in
            name != "updatedAt" && times[name].map { $0.editedAt != edit.editedAt || $0.device != edit.device } ?? true
        }
        return FieldMerge(settings: settings, kept: kept)
    }

    /// `X-Merge-Kept`'s names (bare, or JSON strings), and whether the list
    /// is whole (it ends with `*` when it was too long for a header).
    static func keptMembers(_ header: String) throws -> (names: [String], complete: Bool) {
        var names: [String] = []
        var rest = Substring(header)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            if rest.isEmpty { break }
            if rest.first == "*" { return (names, false) }
            if rest.first == "\"" {
                // A JSON string: up to the first quote no backslash escapes.
                var end = rest.index(after: rest.startIndex)
                var escaped = false
                while end < rest.endIndex, escaped || rest[end] != "\"" {
                    escaped = !escaped && rest[end] == "\\"
                    end = rest.index(after: end)
                }
                guard end < rest.endIndex,
                    let value = try? JSONParser.parse(Array(rest[...end].utf8)), let name = value.stringValue
                else { throw ClientError.badAnswer("X-Merge-Kept is not a list of names: \(header)") }
                names.append(name)
                rest = rest[rest.index(after: end)...]
            } else {
                let name = rest.prefix { $0 != "," }
                names.append(String(name).trimmingCharacters(in: .whitespaces))
                rest = rest[name.endIndex...]
            }
        }
        return (names, true)
    }

    /// An instant as the wire's microseconds, and back.
    static func micros(_ date: Date) -> Timestamp.Micros { Timestamp.Micros((date.timeIntervalSince1970 * 1_000_000).rounded()) }
    static func date(_ micros: Timestamp.Micros) -> Date { Date(timeIntervalSince1970: Double(micros) / 1_000_000) }
}
