import MockCloudJSON
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// RFC 7396 merge patch, keeping member order.
@Suite struct JSONMergePatchTests {
    /// RFC 7396 Appendix A, every example; results printed compactly so order counts too.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a": "c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a": "b", "b": "c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b": "c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a": "c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a": ["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a": {"b": "d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a": [1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c", "d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e": null, "a": 1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a": "b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a": {"bb": {}}}"#),
    ])
    func rfc7396Examples(_ target: String, _ patch: String, _ expected: String) throws {
        #expect(compactText(try json(target).merging(patch: json(patch))) == expected)
    }

    @Test func replacedMembersKeepTheirPlaceAndNewOnesAreAppended() throws {
        let merged = try json(#"{"a": 1, "b": 2, "c": 3}"#).merging(patch: json(#"{"d": 4, "b": 20}"#))
        #expect(compactText(merged) == #"{"a": 1, "b": 20, "c": 3, "d": 4}"#)
    }

    @Test func nestedObjectsMergeInPlace() throws {
        let target = try json(#"{"units": {"weight": "kg", "height": "cm"}, "z": 0}"#)
        let merged = target.merging(patch: try json(#"{"units": {"weight": "lb", "height": null, "temp": "C"}}"#))
        #expect(compactText(merged) == #"{"units": {"weight": "lb", "temp": "C"}, "z": 0}"#)
    }

    @Test func numberTextSurvivesAMerge() throws {
        let merged = try json(#"{"f": 0.9990998620664758}"#).merging(patch: json(#"{"g": 1.50e3}"#))
        #expect(compactText(merged) == #"{"f": 0.9990998620664758, "g": 1.50e3}"#)
    }
}
