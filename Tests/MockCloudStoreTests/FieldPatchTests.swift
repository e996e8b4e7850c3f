import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The per-field merge's rules, without a disk: each top-level member is
/// one unit with its own edit time; a newer edit applies, ties go by
/// device then by the value's bytes, deletions keep their time.
@Suite struct FieldPatchTests {
    /// 2026-05-18T10:00:00Z and the minutes after it.
    static func minute(_ m: Int) -> Timestamp.Micros { Timestamp.parse("2026-05-18T10:\(m < 10 ? "0" : "")\(m):00Z")! }
    static func text(_ m: Int) -> String { Timestamp.format(minute(m)) }

    static let stored = #"{"weightCalibrationFactor": 1.0, "unitSystem": "metric", "heightCm": 175, "updatedAt": "2026-05-18T10:00:00Z"}"#

    func object(_ text: String) throws -> JSONObject { try #require(try json(text).objectValue) }

    func patch(_ text: String, device: String? = nil) throws -> FieldPatch {
        try FieldPatch(try object(text), device: device.flatMap(DeviceID.init))
    }

    /// Applies patches in turn from `start`, as the store does between writes.
    func deliver(_ patches: [FieldPatch], to start: JSONObject?) -> (JSONObject?, MemberTimes) {
        var document = start
        var times = MemberTimes.wholeDocument(start.map { .object($0) })
        for patch in patches {
            let outcome = patch.apply(to: document, times: times)
            if outcome.changed { (document, times) = (outcome.document, outcome.times) }
        }
        return (document, times)
    }

    @Test func twoPhonesEditingDifferentMembersOfflineBothKeepTheirEditInEitherOrder() throws {
        let a = try patch(#"{"weightCalibrationFactor": 0.999, "updatedAt": "2026-05-18T10:01:00Z"}"#, device: "phone-a")
        let b = try patch(#"{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}"#, device: "phone-b")
        let base = try object(Self.stored)
        let (ab, abTimes) = deliver([a, b], to: base)
        let (ba, baTimes) = deliver([b, a], to: base)
        let expected = try object(
            #"{"weightCalibrationFactor": 0.999, "unitSystem": "imperial", "heightCm": 175, "updatedAt": "\#(Self.text(5))"}"#)
        #expect(ab == expected)
        #expect(ba == expected)
        #expect(abTimes == baTimes)
        #expect(abTimes[MemberName("weightCalibrationFactor")] == MemberEdit(at: Self.minute(1), device: DeviceID("phone-a")))
        #expect(abTimes[MemberName("unitSystem")] == MemberEdit(at: Self.minute(5), device: DeviceID("phone-b")))
        #expect(abTimes[MemberName("heightCm")] == MemberEdit(at: Self.minute(0)))
    }

    @Test func anOlderEditOfAMemberIsKeptOutAndNamedAsKept() throws {
        let base = try object(Self.stored)
        let newer = try patch(#"{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}"#)
        let (document, times) = deliver([newer], to: base)
        let older = try patch(#"{"unitSystem": "metric", "heightCm": 180, "updatedAt": "2026-05-18T10:01:00Z"}"#)
        let outcome = older.apply(to: document, times: times)
        #expect(outcome.changed)
        #expect(outcome.kept == ["unitSystem"])
        #expect(outcome.document["unitSystem"] == .string("imperial"))
        #expect(outcome.document["heightCm"] == .number("180"))
        // The stored updatedAt is the newest edit time: still 10:05.
        #expect(outcome.document["updatedAt"] == .string(Self.text(5)))
    }

    @Test func anEditOlderThanAWholeDocumentWriteLosesOnlyForTheMembersThatDocumentHolds() throws {
        let base = try object(Self.stored)
        let older = try patch(#"{"heightCm": 180, "newMember": true, "updatedAt": "2026-05-18T09:00:00Z"}"#)
        let outcome = older.apply(to: base, times: MemberTimes.wholeDocument(.object(base)))
        #expect(outcome.kept == ["heightCm"])
        #expect(outcome.document["heightCm"] == .number("175"))
        #expect(outcome.document["newMember"] == .bool(true))
        #expect(outcome.document["updatedAt"] == .string("2026-05-18T10:00:00Z"), "kept as written: it is already the newest")
    }

    @Test(arguments: [
        // (device of the stored edit, device of the incoming one, stored value, incoming value, incoming wins)
        ("phone-a", "phone-b", "1", "2", true),
        ("phone-b", "phone-a", "1", "2", false),
        (nil, "phone-a", "2", "1", true),
        ("phone-a", nil, "1", "2", false),
        ("phone-a", "phone-a", "1", "2", true),
        ("phone-a", "phone-a", "2", "1", false),
        ("phone-a", "phone-a", "\"b\"", "\"a\"", false),
        ("phone-a", "phone-a", "\"a\"", "1", true),  // by bytes: `"` is 0x22, `1` is 0x31
        ("phone-a", "phone-a", "1", "1.0", true),  // the number's text, not its value
        ("phone-a", "phone-a", "1", "null", true),  // a deletion is the bytes `null`
    ] as [(String?, String?, String, String, Bool)])
    func equalTimesAreBrokenByDeviceThenByTheValuesBytes(
        _ storedDevice: String?, _ device: String?, _ storedValue: String, _ value: String, _ wins: Bool
    ) throws {
        let first = try patch(#"{"m": \#(storedValue), "updatedAt": "2026-05-18T10:01:00Z"}"#, device: storedDevice)
        let second = try patch(#"{"m": \#(value), "updatedAt": "2026-05-18T10:01:00Z"}"#, device: device)
        let (oneWay, _) = deliver([first, second], to: nil)
        let (otherWay, _) = deliver([second, first], to: nil)
        #expect(oneWay == otherWay)
        let winner = wins ? value : storedValue
        #expect(oneWay?["m"] == (winner == "null" ? nil : try json(winner)))
    }

    @Test func theSamePatchTwiceChangesNothingTheSecondTime() throws {
        let base = try object(Self.stored)
        let edit = try patch(#"{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}"#, device: "phone-b")
        let (document, times) = deliver([edit], to: base)
        let again = edit.apply(to: document, times: times)
        #expect(!again.changed)
        #expect(again.kept.isEmpty, "the same edit is neither newer nor kept")
        #expect(again.document == document)
    }

    @Test func nullDeletesAtItsTimeAndAnOlderValueDoesNotBringTheMemberBack() throws {
        let base = try object(Self.stored)
        let delete = try patch(#"{"heightCm": null, "updatedAt": "2026-05-18T10:05:00Z"}"#)
        let older = try patch(#"{"heightCm": 181, "updatedAt": "2026-05-18T10:03:00Z"}"#)
        let newer = try patch(#"{"heightCm": 182, "updatedAt": "2026-05-18T10:07:00Z"}"#)
        for order in [[delete, older], [older, delete]] {
            let (document, times) = deliver(order, to: base)
            #expect(document?["heightCm"] == nil)
            #expect(times[MemberName("heightCm")] == MemberEdit(at: Self.minute(5), deleted: true))
            let outcome = older.apply(to: document, times: times)
            #expect(outcome.kept == ["heightCm"] || !outcome.changed)
        }
        let (document, _) = deliver([delete, older, newer], to: base)
        #expect(document?["heightCm"] == .number("182"), "a newer value brings it back, appended")
        #expect(document?.members.last?.key == "heightCm")
    }

    @Test func membersNotInThePatchKeepTheirValuesTimesAndPlaces() throws {
        let base = try object(Self.stored)
        let (document, times) = deliver([try patch(#"{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}"#)], to: base)
        #expect(document?.members.map(\.key) == ["weightCalibrationFactor", "unitSystem", "heightCm", "updatedAt"])
        #expect(document?["weightCalibrationFactor"] == .number("1.0"), "the number keeps its text")
        #expect(times[MemberName("weightCalibrationFactor")] == MemberEdit(at: Self.minute(0)))
    }

    @Test func aNestedObjectIsOneUnitReplacedWithItsNullsLeftOut() throws {
        let base = try object(#"{"alerts": {"morning": true, "evening": false, "night": true}, "updatedAt": "2026-05-18T10:00:00Z"}"#)
        let edit = try patch(#"{"alerts": {"morning": false, "night": null, "extra": {"x": null, "y": 1}}, "updatedAt": "2026-05-18T10:02:00Z"}"#)
        let (document, _) = deliver([edit], to: base)
        #expect(document?["alerts"] == (try json(#"{"morning": false, "extra": {"y": 1}}"#)))
    }

    @Test func whenNothingIsStoredThePatchCreatesTheDocumentInItsOrder() throws {
        let create = try patch(#"{"a": 1, "updatedAt": "2026-05-18T10:01:00.5+02:00", "gone": null, "b": [1, null]}"#, device: "d1")
        let outcome = create.apply(to: nil, times: MemberTimes())
        #expect(outcome.changed)
        #expect(outcome.document == (try object(#"{"a": 1, "updatedAt": "20260518T080100.500000Z", "b": [1, null]}"#)))
        #expect(outcome.times[MemberName("gone")] == MemberEdit(at: Timestamp.parse("20260518T080100.5Z")!, device: DeviceID("d1"), deleted: true))
    }

    @Test func aPatchOfOnlyItsTimeCreatesADocumentButChangesAStoredOneNot() throws {
        let onlyTime = try patch(#"{"updatedAt": "2026-05-18T10:09:00Z"}"#)
        #expect(onlyTime.apply(to: nil, times: MemberTimes()).document == (try object(#"{"updatedAt": "\#(Self.text(9))"}"#)))
        let base = try object(Self.stored)
        #expect(!onlyTime.apply(to: base, times: MemberTimes.wholeDocument(.object(base))).changed)
    }

    @Test func membersOfADocumentWithoutAParseableUpdatedAtHaveNoTimeAndLoseToAnyEdit() throws {
        let base = try object(#"{"a": 1, "updatedAt": "yesterday"}"#)
        #expect(MemberTimes.wholeDocument(.object(base)) == MemberTimes())
        let old = try patch(#"{"a": 2, "updatedAt": "1999-01-01T00:00:00Z"}"#)
        let (document, _) = deliver([old], to: base)
        #expect(document == (try object(#"{"a": 2, "updatedAt": "19990101T000000.000000Z"}"#)))
    }

    @Test func theServersStampAndThePatchsTimeAreNoMembers() throws {
        let edit = try patch(#"{"serverReceivedAt": "client", "a": 1, "updatedAt": "2026-05-18T10:01:00Z"}"#)
        let outcome = edit.apply(to: nil, times: MemberTimes())
        #expect(outcome.document["serverReceivedAt"] == nil)
        #expect(outcome.times.edits.keys.map(\.text) == ["a"])
    }

    @Test func aPatchWithoutUpdatedAtIsRefused() throws {
        #expect(throws: SettingsError.self) { try patch(#"{"a": 1}"#) }
        do {
            _ = try patch(#"{"a": 1}"#)
        } catch {
            guard case .editTimeMissing = error as? SettingsError else { Issue.record("\(error)"); return }
        }
    }

    @Test(arguments: [#""yesterday""#, "12", "null", #"{"t": 1}"#, #""2026-13-01T00:00:00Z""#])
    func aPatchWhoseUpdatedAtDoesNotParseIsRefusedNamingIt(_ value: String) throws {
        do {
            _ = try patch(#"{"a": 1, "updatedAt": \#(value)}"#)
            Issue.record("accepted")
        } catch {
            guard case .editTimeUnreadable(let text) = error as? SettingsError else { Issue.record("\(error)"); return }
            #expect(text == compactText(try json(value)))
        }
    }

    @Test func manyMembersMergeInOnePass() throws {
        let count = 20_000
        let stored = "{" + (0..<count).map { "\"m\($0)\": \($0)" }.joined(separator: ", ") + #", "updatedAt": "2026-05-18T10:00:00Z"}"#
        let base = try object(stored)
        let edit = try patch("{" + (0..<count).map { "\"m\($0 * 2)\": -1" }.joined(separator: ", ") + #", "updatedAt": "2026-05-18T10:01:00Z"}"#)
        let outcome = edit.apply(to: base, times: MemberTimes.wholeDocument(.object(base)))
        #expect(outcome.document.count == count + count / 2 + 1)
        #expect(outcome.document["m0"] == .number("-1"))
        #expect(outcome.document["m1"] == .number("1"))
    }
}

/// `<key>.json.times`: its form, read back, and what makes it damaged.
@Suite struct MemberTimesFileTests {
    static let tag = EntityTag(of: Array("{}".utf8))

    @Test func theFileReadsBackAsWritten() throws {
        var times = MemberTimes()
        times[MemberName("b")] = MemberEdit(at: 1_779_000_000_000_000, device: DeviceID("phone-a"))
        times[MemberName("a\u{e9}")] = MemberEdit(at: 1_779_000_000_000_001, deleted: true)
        let file = MemberTimesFile(documents: [(Self.tag, times), (EntityTag(of: [1]), MemberTimes())])
        #expect(try MemberTimesFile(bytes: file.bytes) == file)
        let text = String(decoding: file.bytes, as: UTF8.self)
        #expect(text.hasPrefix("{\n  \"format\": \"mockcloud-member-times 1\",\n  \"documents\": {\n    \"\(Self.tag.text.dropFirst().dropLast())\": {\n      \"a\\u00e9\": {"))
        #expect(text.contains(#""at": "20260517T064000.000001Z","#))
        #expect(text.contains(#""device": "phone-a""#))
    }

    @Test(arguments: [
        ("not json", "it is not valid JSON"),
        (#"{"format": "other", "documents": {}}"#, #"it does not begin with the format "mockcloud-member-times 1""#),
        (#"{"format": "mockcloud-member-times 1"}"#, #"it holds no "documents" object, or other members beside it"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"xyz": {}}}"#, #""xyz" is not a document's entity tag"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"a": 1}}}"#,
         #"the time of member "a" is not an object"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"a": {"at": "soon"}}}}"#,
         #"member "a" has a time that does not parse: soon"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"a": {"device": "d"}}}}"#,
         #"member "a" has no time"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"a": {"at": "20260101T000000Z", "device": "no spaces"}}}}"#,
         #"member "a" names a device of the wrong shape"#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"a": {"at": "20260101T000000Z", "who": 1}}}}"#,
         #"member "a" has an unknown field "who""#),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0123456789abcdef": {"updatedAt": {"at": "20260101T000000Z"}}}}"#,
         #""updatedAt" has a time, but it is no member of its own"#),
    ])
    func aDamagedFileSaysWhatIsWrong(_ text: String, _ reason: String) {
        #expect(throws: MemberTimesFile.Damage(reason)) { try MemberTimesFile(bytes: Array(text.utf8)) }
    }

    @Test func timesThatDoNotFitTheDocumentSaySo() throws {
        let document = try #require(try json(#"{"a": 1, "updatedAt": "x"}"#).objectValue)
        var live = MemberTimes()
        live[MemberName("b")] = MemberEdit(at: 0)
        #expect(live.mismatch(with: document) == #"member "b" has a time but is not in the document"#)
        var deleted = MemberTimes()
        deleted[MemberName("a")] = MemberEdit(at: 0, deleted: true)
        #expect(deleted.mismatch(with: document) == #"member "a" is in the document but its time is a deletion"#)
        var fine = MemberTimes()
        fine[MemberName("a")] = MemberEdit(at: 0)
        fine[MemberName("c")] = MemberEdit(at: 0, deleted: true)
        #expect(fine.mismatch(with: document) == nil)
    }
}
