/// A JSON object as an ordered list of members with unique keys.
/// Setting an existing key replaces its value in place (as a Python dict does);
/// a new key is appended; setting `nil` removes the member.
package struct JSONObject: Equatable, Sendable {
    package private(set) var members: [JSONMember] = []

    package init() {}

    /// Builds an object; a repeated key keeps its first position and last value.
    package init(_ members: [JSONMember]) {
        for member in members { self[member.key] = member.value }
    }

    package var isEmpty: Bool { members.isEmpty }
    package var count: Int { members.count }

    /// The position of `key`. Keys are compared by their code points, as
    /// JSON and Python compare them: Swift's `==` on strings would take "é"
    /// and "e\u{301}", or "K" and the Kelvin sign, for one key.
    package func index(of key: String) -> Int? {
        members.firstIndex { JSONObject.sameBytes($0.key, key) }
    }

    /// Equal UTF-8 bytes, compared in place: a `UTF8View` walked byte by
    /// byte took most of a feed page's time, and a call across modules per
    /// comparison is not inlined.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let count = a.utf8.count
        guard count == b.utf8.count else { return false }
        return a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
        }.flatMap { $0 } ?? a.utf8.elementsEqual(b.utf8)
    }

    package subscript(key: String) -> JSONValue? {
        get { index(of: key).map { members[$0].value } }
        set {
            let found = index(of: key)
            switch (found, newValue) {
            case (let i?, let value?): members[i].value = value
            case (let i?, nil): members.remove(at: i)
            case (nil, let value?): members.append(JSONMember(key, value))
            case (nil, nil): break
            }
        }
    }

    /// An object from members whose keys the caller knows to be unique
    /// (built in one pass, where `init(_:)` looks each key up).
    package init(uniqueMembers: [JSONMember]) {
        members = uniqueMembers
    }

    /// Appends a member whose key the caller knows to be new (the parser uses
    /// this with its own index so that large objects stay linear).
    mutating func appendNew(_ key: String, _ value: JSONValue) {
        members.append(JSONMember(key, value))
    }

    /// Replaces the value at a known position.
    mutating func replaceValue(at index: Int, with value: JSONValue) {
        members[index].value = value
    }
}
