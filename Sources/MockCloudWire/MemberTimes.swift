import MockCloudJSON

/// What is wrong with a document of the wire that does not read, in a
/// sentence (the server logs it, the client puts it in its error).
package struct WireFormatError: Error, Equatable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A top-level member's name, compared by its UTF-8 bytes, as JSON objects
/// here compare keys (Swift's `==` would take "é" and "e\u{301}" for one).
package struct MemberName: Hashable, Comparable, Sendable {
    package let text: String
    let bytes: [UInt8]

    package init(_ text: String) {
        self.text = text
        bytes = Array(text.utf8)
    }

    package static func == (a: MemberName, b: MemberName) -> Bool { a.bytes == b.bytes }
    package func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
    package static func < (a: MemberName, b: MemberName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// The last edit of one top-level member of the settings: when, by which
/// device, and whether it deleted the member.
package struct MemberEdit: Sendable, Equatable {
    package var at: Timestamp.Micros
    /// `X-Device-Id` of the write; `nil` when it named none.
    package var device: DeviceID?
    package var deleted: Bool

    package init(at: Timestamp.Micros, device: DeviceID? = nil, deleted: Bool = false) {
        self.at = at
        self.device = device
        self.deleted = deleted
    }
}

/// When each top-level member of a settings document was last edited
/// (docs/API.md §3, "Per-field merge"): what a GET with `X-Merge: fields`
/// answers and what the box keeps beside the document. A member without a
/// time is absent.
package struct MemberTimes: Sendable, Equatable {
    /// Live members and deletions.
    package private(set) var edits: [MemberName: MemberEdit] = [:]

    package init() {}

    /// False for the two members that are no edits of their own: a patch's
    /// time (`updatedAt`) and the server's stamp (`serverReceivedAt`).
    package static func isEditable(_ name: String) -> Bool { name != "updatedAt" && name != "serverReceivedAt" }

    package subscript(name: MemberName) -> MemberEdit? {
        get { edits[name] }
        set { edits[name] = newValue }
    }

    /// `{"<member>": {"at": "<time>", "device": "<id>", "deleted": true}, …}`,
    /// members in byte order; `device` and `deleted` only when there is one.
    package var json: JSONValue {
        var members: [JSONMember] = []
        members.reserveCapacity(edits.count)
        for (name, edit) in edits.sorted(by: { $0.key < $1.key }) {
            var fields = [JSONMember("at", .string(Timestamp.format(edit.at)))]
            if let device = edit.device { fields.append(JSONMember("device", .string(device.rawValue))) }
            if edit.deleted { fields.append(JSONMember("deleted", .bool(true))) }
            members.append(JSONMember(name.text, .object(JSONObject(uniqueMembers: fields))))
        }
        return .object(JSONObject(uniqueMembers: members))
    }

    /// Reads `json`'s form back; throws `WireFormatError` saying what is wrong.
    package init(json value: JSONValue) throws {
        guard let object = value.objectValue else { throw WireFormatError("the times of a document are not an object") }
        for member in object.members {
            let name = String(reflecting: member.key)
            guard MemberTimes.isEditable(member.key) else {
                throw WireFormatError("\(name) has a time, but it is no member of its own")
            }
            guard let fields = member.value.objectValue else {
                throw WireFormatError("the time of member \(name) is not an object")
            }
            edits[MemberName(member.key)] = try Self.edit(of: name, fields)
        }
    }

    /// One member's `{"at", "device"?, "deleted"?}`.
    private static func edit(of name: String, _ fields: JSONObject) throws -> MemberEdit {
        var edit = MemberEdit(at: 0)
        var sawTime = false
        for field in fields.members {
            switch (field.key, field.value) {
            case ("at", .string(let text)):
                guard let at = Timestamp.parse(text) else {
                    throw WireFormatError("member \(name) has a time that does not parse: \(text)")
                }
                edit.at = at
                sawTime = true
            case ("device", .string(let text)):
                guard let device = DeviceID(text) else { throw WireFormatError("member \(name) names a device of the wrong shape") }
                edit.device = device
            case ("deleted", .bool(true)): edit.deleted = true
            default: throw WireFormatError("member \(name) has an unknown field \(String(reflecting: field.key))")
            }
        }
        guard sawTime else { throw WireFormatError("member \(name) has no time") }
        return edit
    }
}

/// The answer to a settings GET with `X-Merge: fields`:
/// `{"document": {…}, "times": {…}}`.
package struct TimedDocument: Sendable, Equatable {
    package var document: JSONValue
    package var times: MemberTimes

    package init(document: JSONValue, times: MemberTimes) {
        self.document = document
        self.times = times
    }

    package var json: JSONValue {
        .object(JSONObject(uniqueMembers: [JSONMember("document", document), JSONMember("times", times.json)]))
    }

    /// Reads `json`'s form back: a document object and its times.
    package init(json value: JSONValue) throws {
        guard let object = value.objectValue, case .object? = object["document"], let times = object["times"] else {
            throw WireFormatError("settings with member times without their document or times")
        }
        self.init(document: object["document"]!, times: try MemberTimes(json: times))
    }
}

/// `X-Merge-Kept`: the members of a per-field patch whose stored value won
/// (docs/API.md §3). Names are `, `-separated, each as it is when made of
/// letters, digits, `_`, `.` and `-`, else as a JSON string (quoted, with
/// `\uXXXX` escapes: nothing a header cannot carry); a list too long for
/// the header ends with `*`.
package struct MergeKept: Sendable, Equatable {
    package var names: [String]
    /// False when the list ends with `*`: the header had no room for the
    /// rest, which the member times tell.
    package var isComplete: Bool

    package init(names: [String], isComplete: Bool = true) {
        self.names = names
        self.isComplete = isComplete
    }

    /// The longest header value: nginx takes an answer's headers in one
    /// buffer of a page.
    package static let headerLimit = 2048

    /// The header's value for `names`; `nil` when none. Past `headerLimit`,
    /// the names that fit and then `*`.
    package static func header(_ names: [String]) -> String? {
        guard !names.isEmpty else { return nil }
        var out: [UInt8] = []
        for name in names {
            var item: [UInt8] = []
            if isBare(name) { item = Array(name.utf8) } else { JSONPrinter.writeString(name, into: &item) }
            let separator = out.isEmpty ? 0 : 2
            if out.count + separator + item.count + 3 > headerLimit {
                out += Array((out.isEmpty ? "*" : ", *").utf8)
                break
            }
            if separator > 0 { out += [UInt8(ascii: ","), UInt8(ascii: " ")] }
            out += item
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True for a name sent as it is: letters, digits, `_`, `.` and `-`.
    private static func isBare(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            ASCII.isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    /// Reads a header value back (bare names with spaces around them, JSON
    /// strings, a closing `*`); throws `WireFormatError` for a quoted name
    /// that is not a JSON string.
    package init(header: String) throws {
        self.init(names: [])
        var rest = Substring(header)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            if rest.isEmpty { break }
            if rest.first == "*" {
                isComplete = false
                return
            }
            if rest.first == "\"" {
                // A JSON string: up to the first quote no backslash escapes.
                var end = rest.index(after: rest.startIndex)
                var escaped = false
                while end < rest.endIndex, escaped || rest[end] != "\"" {
                    escaped = !escaped && rest[end] == "\\"
                    end = rest.index(after: end)
                }
                guard end < rest.endIndex, let value = try? JSONParser.parse(Array(rest[...end].utf8)),
                    let name = value.stringValue
                else { throw WireFormatError("X-Merge-Kept is not a list of names: \(header)") }
                names.append(name)
                rest = rest[rest.index(after: end)...]
            } else {
                let name = rest.prefix { $0 != "," }
                names.append(name.trimmingHeaderSpace())
                rest = rest[name.endIndex...]
            }
        }
    }
}
