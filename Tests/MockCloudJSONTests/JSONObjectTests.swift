import MockCloudJSON
import MockCloudSystem
import Testing

/// `JSONObject` behaves like a Python dict: ordered, unique keys.
@Suite struct JSONObjectTests {
    @Test func settingAnExistingKeyReplacesInPlace() {
        var object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .number("2"))])
        object["a"] = .string("x")
        #expect(object.members == [JSONMember("a", .string("x")), JSONMember("b", .number("2"))])
    }

    @Test func settingANewKeyAppends() {
        var object = JSONObject([JSONMember("b", .number("2"))])
        object["a"] = .null
        #expect(object.members == [JSONMember("b", .number("2")), JSONMember("a", .null)])
    }

    @Test func settingNilRemovesAndMissingKeysStayMissing() {
        var object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .number("2"))])
        object["a"] = nil
        object["zz"] = nil
        #expect(object.members == [JSONMember("b", .number("2"))])
        #expect(object["a"] == nil)
        #expect(object.count == 1)
        #expect(!object.isEmpty)
    }

    @Test func buildingWithARepeatedKeyKeepsTheFirstPositionAndTheLastValue() {
        let object = JSONObject([JSONMember("a", .number("1")), JSONMember("b", .null), JSONMember("a", .number("3"))])
        #expect(object.members == [JSONMember("a", .number("3")), JSONMember("b", .null)])
        #expect(object.index(of: "b") == 1)
    }

    /// Keys compare as UTF-8 bytes, inline (up to 15 bytes) and heap strings alike.
    @Test func keysAreFoundByTheirExactBytes() {
        let long = "serverReceivedAtX"
        let object = JSONObject([
            JSONMember("", .number("0")), JSONMember(long, .number("1")), JSONMember("é", .number("2")),
            JSONMember(String(long.dropLast()) + "Y", .number("3")),
        ])
        #expect(object.index(of: "") == 0)
        #expect(object.index(of: long) == 1)
        #expect(object.index(of: String(long.dropLast()) + "Y") == 3)
        #expect(object.index(of: String(long.dropLast()) + "Z") == nil)
        #expect(object.index(of: "é") == 2)
        #expect(object.index(of: "e\u{301}") == nil)  // canonically equal, other bytes
        #expect(object.index(of: "\u{212A}") == nil)  // the Kelvin sign is not "K"
    }
}
