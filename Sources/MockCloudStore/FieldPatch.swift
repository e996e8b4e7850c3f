import MockCloudJSON
import MockCloudWire

/// A per-field merge patch (`PATCH` with `X-Merge: fields`, docs/API.md §3):
/// the top-level members one device changed, each edited at the patch's
/// `updatedAt`. Each member is one unit with its own time: it is applied
/// when its edit is newer than the stored member's, so that patches
/// delivered in any order give one document.
package struct FieldPatch: Sendable {
    /// The patch as sent.
    package let patch: JSONObject
    /// Its `updatedAt`: when each of its members was edited.
    package let at: Timestamp.Micros
    /// `X-Device-Id`, which orders edits made at one instant.
    package let device: DeviceID?

    /// Refuses a patch without a parseable `updatedAt`: it says when its
    /// edits were made, and nothing else can.
    package init(_ patch: JSONObject, device: DeviceID?) throws(SettingsError) {
        guard let value = patch["updatedAt"] else { throw .editTimeMissing }
        guard let text = value.stringValue, let at = Timestamp.parse(text) else {
            throw .editTimeUnreadable(String(decoding: JSONPrinter.compact(value), as: UTF8.self))
        }
        self.patch = patch
        self.at = at
        self.device = device
    }

    /// What merging a patch did.
    package struct Outcome: Sendable {
        /// The document to store (the stored one when nothing changed).
        package var document: JSONObject
        package var times: MemberTimes
        /// The patch's members whose stored value won, in the patch's order.
        package var kept: [String]
        /// False when the patch changed no value and no time: nothing is to be written.
        package var changed: Bool
    }

    /// Merges the patch into `stored` (`nil`: nothing stored, and the patch
    /// creates the document), whose member times are `times`.
    ///
    /// A member's new value is the patch's, with RFC 7396's rules for what
    /// a merge patch puts where nothing was: `null` deletes the member (the
    /// deletion keeps its time, so an older value does not bring it back),
    /// and `null`s inside a nested object are left out. It is not merged
    /// into the stored member's value: the stored value is another edit's,
    /// and a result made of two edits would depend on their order of
    /// arrival. Members keep their places; new ones are appended. The
    /// stored `updatedAt` becomes the newest edit time, in the server's
    /// form, or stays as written when it is already that new.
    package func apply(to stored: JSONObject?, times storedTimes: MemberTimes) -> Outcome {
        var members = stored?.members ?? []
        var position: [MemberName: Int] = [:]
        position.reserveCapacity(members.count + patch.count)
        for (index, member) in members.enumerated() { position[MemberName(member.key)] = index }
        var removed = Set<Int>()
        var times = storedTimes
        var kept: [String] = []
        var changed = stored == nil
        let updatedAt = MemberName("updatedAt")
        for member in patch.members {
            let name = MemberName(member.key)
            guard MemberTimes.isEditable(member.key) else {
                // The patch's own time keeps its place in a new document.
                if name == updatedAt, position[name] == nil {
                    position[name] = members.count
                    members.append(JSONMember(member.key, .null))
                }
                continue
            }
            let deleting = member.value == .null
            let value = deleting ? JSONValue.null : JSONValue.null.merging(patch: member.value)
            let edit = MemberEdit(at: at, device: device, deleted: deleting)
            let index = position[name]
            if let current = times[name] {
                let currentValue = current.deleted ? JSONValue.null : index.map { members[$0].value } ?? .null
                let newer = edit.isNewer(than: current, { JSONPrinter.compact(value) }, { JSONPrinter.compact(currentValue) })
                guard newer == true else {
                    if newer == false { kept.append(member.key) }
                    continue
                }
            }
            times[name] = edit
            changed = true
            if deleting {
                if let index {
                    removed.insert(index)
                    position[name] = nil
                }
            } else if let index {
                members[index].value = value
            } else {
                position[name] = members.count
                members.append(JSONMember(member.key, value))
            }
        }
        guard changed else {
            return Outcome(document: stored ?? JSONObject(), times: storedTimes, kept: kept, changed: false)
        }
        let previous = stored.flatMap { StoredSettings.updatedAt(of: .object($0)) }
        if let index = position[updatedAt], previous.map({ $0.instant < at }) ?? true {
            members[index].value = .string(Timestamp.format(at))
        }
        let document = removed.isEmpty
            ? JSONObject(uniqueMembers: members)
            : JSONObject(uniqueMembers: members.indices.filter { !removed.contains($0) }.map { members[$0] })
        return Outcome(document: document, times: times, kept: kept, changed: true)
    }
}
