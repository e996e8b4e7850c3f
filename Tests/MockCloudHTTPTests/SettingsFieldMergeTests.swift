import Foundation
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// `PATCH /user/settings` with `X-Merge: fields` (each top-level member by
/// its own edit time), `GET` with `X-Merge: fields` (the member times), and
/// the member-times file beside the settings file (docs/API.md §3).
@Suite struct SettingsFieldMergeTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    static let base = #"{"weightCalibrationFactor": 1.0, "unitSystem": "metric", "heightCm": 175, "updatedAt": "2026-05-18T10:00:00Z"}"#
    static let phoneA = #"{"weightCalibrationFactor": 0.999, "updatedAt": "2026-05-18T10:01:00Z"}"#
    static let phoneB = #"{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}"#

    @discardableResult
    func merge(_ body: String, device: String? = nil, headers: [String: String] = [:]) -> CGIResponse {
        var all = headers.merging(["X-Merge": "fields"]) { given, _ in given }
        if let device { all["X-Device-Id"] = device }
        return server.patch(body, headers: all)
    }

    var timesFile: String? { server.data.text(of: "user_settings/u1.json.times") }

    func timesAnswer() throws -> (status: Int, document: JSONValue?, times: JSONValue?, etag: String?) {
        let response = server.send("GET", headers: ["X-Merge": "fields"])
        guard response.status == 200 else { return (response.status.code, nil, nil, response.header("ETag")) }
        #expect(response.header("X-Merge") == "fields")
        let object = try #require(try json(response.text).objectValue)
        #expect(object.members.map(\.key) == ["document", "times"])
        return (200, object["document"], object["times"], response.header("ETag"))
    }

    @Test func twoPhonesEditingDifferentMembersOfflineBothKeepTheirEdit() throws {
        #expect(server.send("PUT", Self.base).status == 200)
        let b = merge(Self.phoneB, device: "phone-b")
        #expect(b.status == 200)
        #expect(b.header("X-Merge-Kept") == nil)
        let a = merge(Self.phoneA, device: "phone-a")
        #expect(a.status == 200)
        #expect(a.header("X-Merge-Kept") == nil)
        #expect(a.header("ETag") == server.etag)
        #expect(a.header("X-Merge") == "fields", "the box says it merged per field")
        let expected = """
            {
              "weightCalibrationFactor": 0.999,
              "unitSystem": "imperial",
              "heightCm": 175,
              "updatedAt": "20260518T100500.000000Z",
              "serverReceivedAt": "\(SettingsServer.stamp)"
            }
            """
        #expect(server.file == expected)
        #expect(a.text == compactText(try json(expected)))
        // A plain PATCH keeps its meaning: older than the stored updatedAt, refused whole.
        #expect(server.patch(Self.phoneA).status == 409)
    }

    @Test func theTimesFileHoldsTheTimesOfTheDocumentInPlaceAndOfTheOneItReplaced() throws {
        server.send("PUT", Self.base)
        let before = try #require(server.etag)
        merge(Self.phoneB, device: "phone-b")
        let text = try #require(timesFile), after = try #require(server.etag)
        let file = try MemberTimesFile(bytes: Array(text.utf8))
        #expect(file.documents.map(\.tag.text) == [after, before])
        let now = try #require(file.times(for: EntityTag(quoted: after)))
        #expect(now[MemberName("unitSystem")] == MemberEdit(at: Timestamp.parse("2026-05-18T10:05:00Z")!, device: DeviceID("phone-b")))
        #expect(now[MemberName("heightCm")] == MemberEdit(at: Timestamp.parse("2026-05-18T10:00:00Z")!))
        #expect(file.times(for: EntityTag(quoted: before)) == MemberTimes.wholeDocument(try json(Self.base)))
        #expect(server.data.mode(of: "user_settings/u1.json.times") == 0o600)
    }

    @Test func anOlderEditIsKeptOutNamedInXMergeKeptAndTheAnswerIsTheStoredDocument() throws {
        server.send("PUT", Self.base)
        merge(Self.phoneB, device: "phone-b")
        let stored = try #require(server.file)
        let times = timesFile
        let late = merge(#"{"unitSystem": "metric", "updatedAt": "2026-05-18T10:02:00Z"}"#, device: "phone-a")
        #expect(late.status == 200)
        #expect(late.header("X-Merge-Kept") == "unitSystem")
        #expect(late.text == compactText(try json(stored)))
        #expect(server.file == stored, "nothing changed, so nothing was written")
        #expect(timesFile == times)
    }

    @Test func whenNothingIsStoredAPerFieldPatchCreatesTheDocument() throws {
        let created = merge(#"{"a": 1, "gone": null, "updatedAt": "2026-05-18T10:01:00Z"}"#, device: "d1")
        #expect(created.status == 200)
        #expect(server.file == "{\n  \"a\": 1,\n  \"updatedAt\": \"20260518T100100.000000Z\",\n  \"serverReceivedAt\": \"\(SettingsServer.stamp)\"\n}")
        let (_, _, times, _) = try timesAnswer()
        #expect(times == (try json(#"{"a": {"at": "20260518T100100.000000Z", "device": "d1"}, "gone": {"at": "20260518T100100.000000Z", "device": "d1", "deleted": true}}"#)))
    }

    @Test(arguments: [
        (#"{"a": 1}"#, [:], "a per-field patch (X-Merge: fields) needs updatedAt, the time its members were edited; nothing was written"),
        (#"{"a": 1, "updatedAt": "soon"}"#, [:],
         #"updatedAt "soon" is not a time stamp (e.g. 2026-05-18T10:01:00Z); a per-field patch needs the time its members were edited; nothing was written"#),
        (#"{"a": 1, "updatedAt": 5}"#, [:],
         "updatedAt 5 is not a time stamp (e.g. 2026-05-18T10:01:00Z); a per-field patch needs the time its members were edited; nothing was written"),
        (#"{"a": 1, "updatedAt": "2026-05-18T10:01:00Z"}"#, ["X-Merge": "members"],
         #"X-Merge "members" is not known: send X-Merge: fields to merge or read per member, or no X-Merge"#),
        (#"{"a": 1, "updatedAt": "2026-05-18T10:01:00Z"}"#, ["X-Device-Id": "not a device"], "invalid X-Device-Id shape"),
    ] as [(String, [String: String], String)])
    func aPerFieldPatchIsRefusedWithA400WritingNothing(_ body: String, _ headers: [String: String], _ error: String) throws {
        let response = merge(body, headers: headers)
        #expect(response.status == 400)
        #expect(response.text == compactText(.object(JSONObject([JSONMember("error", .string(error))]))))
        #expect(server.data.entries().isEmpty, "nothing on disk, not even a lock")
    }

    @Test(arguments: ["PUT", "DELETE"])
    func xMergeOnAWholeDocumentWriteIsA400(_ method: String) throws {
        server.send("PUT", Self.base)
        let before = server.file
        let response = server.send(method, Self.base, headers: ["X-Merge": "fields"])
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "X-Merge applies to GET, HEAD and PATCH, not \#(method): a \#(method) changes the whole document"}"#)
        #expect(server.file == before)
    }

    @Test func aStaleIfMatchRefusesAPerFieldPatchAsAnyWrite() throws {
        server.send("PUT", Self.base)
        let response = merge(Self.phoneA, headers: ["If-Match": "\"0000000000000000\""])
        #expect(response.status == 412)
        #expect(timesFile == nil)
    }

    // MARK: - Reading the times

    @Test func getWithXMergeFieldsAnswersTheDocumentAndEachMembersTimeWithItsTag() throws {
        server.send("PUT", Self.base)
        merge(Self.phoneB, device: "phone-b")
        let (status, document, times, etag) = try timesAnswer()
        let file = try #require(server.file), tag = try #require(etag)
        #expect(status == 200)
        #expect(document == (try json(file)))
        #expect(etag == server.etag)
        #expect(times == (try json("""
            {"heightCm": {"at": "20260518T100000.000000Z"},
             "unitSystem": {"at": "20260518T100500.000000Z", "device": "phone-b"},
             "weightCalibrationFactor": {"at": "20260518T100000.000000Z"}}
            """)))
        #expect(server.send("GET", headers: ["X-Merge": "fields", "If-None-Match": tag]).status == 304)
        #expect(server.send("GET", headers: ["X-Merge": "other"]).status == 400)
        #expect(server.log.lines.isEmpty)
    }

    @Test func aPlainGetIsByteForByteWhatItWasBeforeTimesExisted() throws {
        server.send("PUT", Self.base)
        merge(Self.phoneB, device: "phone-b")
        let plain = server.send("GET")
        let file = try #require(server.file), etag = try #require(server.etag)
        #expect(plain.status == 200)
        #expect(plain.text == compactText(try json(file)))
        #expect(plain.headers == [.init("ETag", etag)])
    }

    @Test func aPlainWriteGivesEveryMemberItsUpdatedAtAndRemovesTheTimesFile() throws {
        server.send("PUT", Self.base)
        merge(Self.phoneB, device: "phone-b")
        #expect(timesFile != nil)
        #expect(server.send("PUT", #"{"unitSystem": "metric", "updatedAt": "2026-05-18T11:00:00Z"}"#).status == 200)
        #expect(timesFile == nil)
        let (_, _, times, _) = try timesAnswer()
        #expect(times == (try json(#"{"unitSystem": {"at": "20260518T110000.000000Z"}}"#)))
        #expect(server.log.lines.isEmpty, "a plain write's document has whole-document times, which is no problem")
        merge(#"{"a": 1, "updatedAt": "2026-05-18T11:01:00Z"}"#)
        #expect(server.send("DELETE").status == 204)
        #expect(server.data.entries("user_settings").isEmpty)
    }

    @Test func aDocumentWithoutAParseableUpdatedAtHasNoTimesAndAnyEditWins() throws {
        server.send("PUT", #"{"a": 1}"#)
        let (_, _, times, _) = try timesAnswer()
        #expect(times == .object(JSONObject()))
        merge(#"{"a": 2, "updatedAt": "2000-01-01T00:00:00Z"}"#)
        #expect(server.file?.contains("\"a\": 2") == true)
    }

    // MARK: - A times file that cannot be used

    @Test(arguments: [
        ("not json at all", "is damaged: it is not valid JSON"),
        (#"{"format": "mockcloud-member-times 1", "documents": {"0000000000000000": {}}}"#,
         "holds no member times for the stored document"),
    ])
    func aDamagedTimesFileIsLoggedAndReadersGetWholeDocumentTimes(_ text: String, _ problem: String) throws {
        server.send("PUT", Self.base)
        merge(Self.phoneB, device: "phone-b")
        try server.data.write(text, to: "user_settings/u1.json.times")
        let (status, _, times, _) = try timesAnswer()
        let file = try #require(server.file)
        #expect(status == 200)
        #expect(times == MemberTimes.wholeDocument(try json(file)).json)
        let line = try #require(server.log.lines.first)
        #expect(line.hasPrefix(server.data.path + "/user_settings/u1.json.times " + problem))
        #expect(line.hasSuffix("every member of the stored settings takes their updatedAt as its edit time until the next per-field write"))
        // The next per-field write works from those times and mends the file.
        #expect(merge(#"{"heightCm": 180, "updatedAt": "2026-05-18T10:06:00Z"}"#).status == 200)
        #expect(server.log.lines.count == 2)
        _ = try timesAnswer()
        #expect(server.log.lines.count == 2)
    }

    @Test func timesThatDoNotFitTheDocumentAreLoggedAndNotUsed() throws {
        server.send("PUT", Self.base)
        merge(#"{"heightCm": null, "updatedAt": "2026-05-18T10:05:00Z"}"#)
        // The document edited by hand to hold the member again, times kept.
        let text = try #require(server.file).replacingOccurrences(of: "\"weightCalibrationFactor\"", with: "\"heightCm\": 1,\n  \"weightCalibrationFactor\"")
        let times = try MemberTimesFile(bytes: Array(try #require(timesFile).utf8))
        try server.storeByHand(text)
        let retagged = MemberTimesFile(documents: [(EntityTag(of: Array(text.utf8)), times.documents[0].times)])
        try server.data.write(retagged.bytes, to: "user_settings/u1.json.times")
        #expect(try timesAnswer().status == 200)
        #expect(server.log.lines.first?.contains(#"does not fit the stored document: member "heightCm" is in the document but its time is a deletion"#) == true)
    }
}

/// The member times with signing on: signed like the document, in a place
/// of their own, and a tampered file is a logged degradation, not a 500.
@Suite struct SignedFieldMergeTests {
    let server: SettingsServer
    let integrity: Integrity

    init() throws {
        integrity = try SigningFixture.integrity("k1:\(SigningFixture.hexSecret)\n")
        server = try SettingsServer(integrity: integrity)
    }

    @discardableResult
    func merge(_ body: String) -> CGIResponse { server.patch(body, headers: ["X-Merge": "fields"]) }

    @Test func theTimesFileIsSignedAndVerifies() throws {
        #expect(merge(#"{"a": 1, "updatedAt": "2026-05-18T10:01:00Z"}"#).status == 200)
        #expect(merge(#"{"b": 1, "updatedAt": "2026-05-18T10:02:00Z"}"#).status == 200)
        #expect(server.data.entries("user_settings") == ["u1.json", "u1.json.mac", "u1.json.times", "u1.json.times.mac"])
        let times = try #require(server.data.bytes(of: "user_settings/u1.json.times"))
        let place = SettingsStore.timesPlace(UserKey("u1")!)
        #expect(integrity.verdict(for: times, sidecar: server.data.bytes(of: "user_settings/u1.json.times.mac"), at: place)
            == .signed(keyID: "k1"))
        // The document's MAC does not verify the times, nor theirs the document.
        #expect(integrity.verdict(for: times, sidecar: server.data.bytes(of: "user_settings/u1.json.mac"), at: place)
            != .signed(keyID: "k1"))
        #expect(server.send("GET", headers: ["X-Merge": "fields"]).status == 200)
        #expect(server.log.lines.isEmpty)
    }

    @Test func aTamperedTimesFileIsLoggedAndDegradesNeverA500() throws {
        merge(#"{"a": 1, "updatedAt": "2026-05-18T10:01:00Z"}"#)
        let text = try #require(server.data.text(of: "user_settings/u1.json.times"))
        try server.data.write(text.replacingOccurrences(of: "20260518T100100", with: "20990101T000000"), to: "user_settings/u1.json.times")
        let response = server.send("GET", headers: ["X-Merge": "fields"])
        #expect(response.status == 200)
        #expect(server.log.lines.first?.contains("u1.json.times failed its integrity check (MAC does not match") == true)
        #expect(server.send("GET").status == 200, "the document itself still verifies")
        #expect(merge(#"{"a": 2, "updatedAt": "2026-05-18T10:03:00Z"}"#).status == 200)
    }
}
