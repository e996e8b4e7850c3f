import MockCloudJSON
import MockCloudWire

extension MemberEdit {
    /// The edit's order among edits of one member at one instant:
    /// `X-Device-Id` (none first, then in byte order), then the value's
    /// compact JSON bytes (`null` for a deletion), printed only for such a
    /// tie. True when `self` comes after `other`, false when before, `nil`
    /// when they are the same edit.
    func isNewer(
        than other: MemberEdit, _ valueBytes: () -> [UInt8], _ otherValueBytes: () -> [UInt8]
    ) -> Bool? {
        if at != other.at { return at > other.at }
        let mine = device.map { Array($0.rawValue.utf8) }, theirs = other.device.map { Array($0.rawValue.utf8) }
        if mine != theirs {
            guard let mine else { return false }
            guard let theirs else { return true }
            return theirs.lexicographicallyPrecedes(mine)
        }
        let bytes = valueBytes(), otherBytes = otherValueBytes()
        if bytes == otherBytes { return nil }
        return otherBytes.lexicographicallyPrecedes(bytes)
    }
}

/// The times a per-field merge compares (`MemberTimes`, the wire's): a
/// member without a time loses to any edit; so does a member the document
/// lacks and no deletion names.
extension MemberTimes {
    /// Whole-document times, those of a plain write: every member of
    /// `document` at its `updatedAt`, by no device; none when it has no
    /// parseable `updatedAt` (or is no object).
    package static func wholeDocument(_ document: JSONValue?) -> MemberTimes {
        var times = MemberTimes()
        guard let object = document?.objectValue, let updatedAt = StoredSettings.updatedAt(of: document) else {
            return times
        }
        for member in object.members where isEditable(member.key) {
            times[MemberName(member.key)] = MemberEdit(at: updatedAt.instant)
        }
        return times
    }

    /// Why these times cannot be `document`'s: a live member it lacks, or
    /// a deletion of one it holds; `nil` when they can.
    package func mismatch(with document: JSONObject) -> String? {
        var present = Set<MemberName>()
        for member in document.members where MemberTimes.isEditable(member.key) {
            let name = MemberName(member.key)
            present.insert(name)
            if edits[name]?.deleted == true {
                return "member \(String(reflecting: member.key)) is in the document but its time is a deletion"
            }
        }
        for (name, edit) in edits where !edit.deleted && !present.contains(name) {
            return "member \(String(reflecting: name.text)) has a time but is not in the document"
        }
        return nil
    }
}

/// `<key>.json.times`, beside a settings document: its member times, keyed
/// by the document's entity tag, for the document in place and (after a
/// per-field write) the one it replaced, so that a reader of either finds
/// its own times while the pair is replaced:
///
///     {
///       "format": "mockcloud-member-times 1",
///       "documents": {
///         "<16 hex digits of the ETag>": {"<member>": {"at": "…", "device": "…"}, …},
///         …
///       }
///     }
///
/// The Python service never reads it.
package struct MemberTimesFile: Sendable, Equatable {
    package static let format = "mockcloud-member-times 1"

    /// Times by the entity tag of the document they belong to, newest first.
    package var documents: [(tag: EntityTag, times: MemberTimes)]

    package init(documents: [(tag: EntityTag, times: MemberTimes)]) {
        self.documents = documents
    }

    package static func == (a: MemberTimesFile, b: MemberTimesFile) -> Bool {
        a.documents.elementsEqual(b.documents) { $0.tag == $1.tag && $0.times == $1.times }
    }

    /// What is wrong with a times file, for the server log.
    package struct Damage: Error, Equatable, CustomStringConvertible {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    /// The times of the document tagged `tag`, if the file holds them.
    package func times(for tag: EntityTag) -> MemberTimes? {
        documents.first { $0.tag == tag }?.times
    }

    /// The file's bytes: Python's indented layout, like the settings file.
    package var bytes: [UInt8] {
        let entries = documents.map { JSONMember(Self.hex(of: $0.tag), $0.times.json) }
        return JSONPrinter.pretty(.object(JSONObject(uniqueMembers: [
            JSONMember("format", .string(Self.format)),
            JSONMember("documents", .object(JSONObject(uniqueMembers: entries))),
        ])))
    }

    /// Reads a times file; throws what is wrong with it.
    package init(bytes: [UInt8]) throws(Damage) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw Damage("it is not valid JSON")
        }
        guard let object = value.objectValue, object["format"] == .string(Self.format) else {
            throw Damage("it does not begin with the format \"\(Self.format)\"")
        }
        guard let entries = object["documents"]?.objectValue, object.count == 2 else {
            throw Damage("it holds no \"documents\" object, or other members beside it")
        }
        documents = []
        for entry in entries.members {
            guard entry.key.utf8.count == 16, entry.key.utf8.allSatisfy({ ASCII.hexValue($0) != nil }) else {
                throw Damage("\(String(reflecting: entry.key)) is not a document's entity tag")
            }
            let times: MemberTimes
            do {
                times = try MemberTimes(json: entry.value)
            } catch {
                throw Damage(String(describing: error))
            }
            documents.append((EntityTag(quoted: "\"" + entry.key + "\""), times))
        }
    }

    /// The tag's 16 hex digits, without its quotes.
    private static func hex(of tag: EntityTag) -> String {
        String(tag.text.dropFirst().dropLast())
    }
}
