import Foundation
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// PATCH: RFC 7396 on the stored document, in place, with PUT's rules.
@Suite struct SettingsPatchTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    static let stored = #"""
        {
          "updatedAt": "20260518T044304.095Z",
          "units": {
            "weight": "kg",
            "height": "cm"
          },
          "goal": 70.50,
          "remove": true,
          "serverReceivedAt": "20250101T000000.000000Z"
        }
        """#

    @Test func aMergePatchReplacesInPlaceRemovesNullsMergesNestedAndAppendsNewFields() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(
            #"{"units": {"weight": "lb", "height": null, "temp": "C"}, "remove": null, "goal": 1.50e3, "new": [1, 2]}"#)
        #expect(response.status == 200)
        #expect(server.file == """
            {
              "updatedAt": "20260518T044304.095Z",
              "units": {
                "weight": "lb",
                "temp": "C"
              },
              "goal": 1.50e3,
              "serverReceivedAt": "20260518T044304.134233Z",
              "new": [
                1,
                2
              ]
            }
            """)
        #expect(response.text == #"{"updatedAt": "20260518T044304.095Z", "units": {"weight": "lb", "temp": "C"}, "#
            + #""goal": 1.50e3, "serverReceivedAt": "20260518T044304.134233Z", "new": [1, 2]}"#)
        #expect(response.headers == [.init("ETag", server.etag ?? "")])
    }

    @Test func anEmptyPatchOnlyRestampsTheDocument() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch("{}").status == 200)
        #expect(server.file == Self.stored.replacingOccurrences(of: "20250101T000000.000000Z", with: SettingsServer.stamp))
    }

    @Test func aServerReceivedAtInThePatchIsOverwrittenByTheServer() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"serverReceivedAt": "client"}"#).status == 200)
        #expect(server.file == Self.stored.replacingOccurrences(of: "20250101T000000.000000Z", with: SettingsServer.stamp))
    }

    @Test(arguments: [
        "application/merge-patch+json", "application/merge-patch+json; charset=utf-8",
        "Application/Merge-Patch+JSON", " application/merge-patch+json ;charset=UTF-8",
    ])
    func theMergePatchContentTypeIsAcceptedWithParametersAndAnyCase(_ contentType: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.send("PATCH", #"{"goal": 1}"#, contentType: contentType)
        #expect(response.status == 200)
        #expect(server.file?.contains("\"goal\": 1,") == true)
    }

    @Test(arguments: [
        ("", "none"), ("application/json", "application/json"), ("text/plain", "text/plain"),
        ("application/merge-patch", "application/merge-patch"),
        ("application/json-patch+json", "application/json-patch+json"),
        ("application/json; profile=merge-patch+json", "application/json; profile=merge-patch+json"),
    ])
    func anyOtherContentTypeIs415AndNothingChanges(_ contentType: String, _ named: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.send("PATCH", #"{"goal": 1}"#, contentType: contentType)
        #expect(response.status == 415)
        #expect(response.text == #"{"error": "Content-Type must be application/merge-patch+json (got \#(named))"}"#)
        #expect(server.file == Self.stored)
    }

    @Test func patchWhenNothingIsStoredIs404AndCreatesNothing() {
        let response = server.patch(#"{"a": 1}"#)
        #expect(response.status == 404)
        #expect(response.text == SettingsServer.notFoundBody)
        #expect(server.data.entries("user_settings") == [])
    }

    @Test(arguments: ["[]", #"[{"a": 1}]"#, #""x""#, "null", "1", "true"])
    func aPatchThatIsNotAnObjectIs400(_ body: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "merge patch must be a JSON object"}"#)
        #expect(server.file == Self.stored)
    }

    @Test(arguments: ["", "{", #"{"a":}"#, "{\"a\":1}}"])
    func aPatchThatIsNotJSONIs400(_ body: String) throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(body)
        #expect(response.status == 400)
        #expect(response.text == #"{"error": "body is not valid JSON"}"#)
        #expect(server.file == Self.stored)
    }

    @Test func aPatchNestedTooDeeplyIs400() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(SettingsPutTests.nested(65))
        #expect(response.text == #"{"error": "JSON nested deeper than 64 levels"}"#)
    }

    @Test func aPatchWithAnOlderUpdatedAtIs409AndTheFileIsUntouched() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(#"{"updatedAt": "2026-05-18T06:43:04.094+02:00", "goal": 1}"#)
        #expect(response.status == 409)
        #expect(response.text
            == #"{"error": "updatedAt 2026-05-18T06:43:04.094+02:00 is older than the stored updatedAt "#
            + #"20260518T044304.095Z; nothing was written", "current": {"updatedAt": "20260518T044304.095Z", "#
            + #""units": {"weight": "kg", "height": "cm"}, "goal": 70.50, "remove": true, "#
            + #""serverReceivedAt": "20250101T000000.000000Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag(of: Array(Self.stored.utf8)).text)])
        #expect(server.file == Self.stored)
    }

    @Test(arguments: [
        (#"{"goal": 1}"#, "20260518T044304.095Z"),
        (#"{"updatedAt": "2026-05-18T06:43:04.095+02:00"}"#, "2026-05-18T06:43:04.095+02:00"),
        (#"{"updatedAt": "2030-01-01T00:00:00Z"}"#, "2030-01-01T00:00:00Z"),
    ])
    func aPatchWithoutOrWithAnEqualOrNewerUpdatedAtIsWritten(_ patch: String, _ updatedAt: String) throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(patch).status == 200)
        #expect(server.file?.hasPrefix("{\n  \"updatedAt\": \"\(updatedAt)\",\n") == true)
    }

    @Test func aPatchThatRemovesUpdatedAtIsWritten() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"updatedAt": null}"#).status == 200)
        #expect(server.file?.hasPrefix("{\n  \"units\": {") == true)
    }

    @Test func aPatchWithAStaleIfMatchIs412WithCurrent() throws {
        try server.storeByHand(Self.stored)
        let response = server.patch(#"{"goal": 1}"#, headers: ["If-Match": "\"0000000000000000\""])
        #expect(response.status == 412)
        #expect(response.text.hasPrefix(
            #"{"error": "precondition failed: If-Match does not match the stored settings' ETag", "current": {"updatedAt": "#))
        #expect(response.header("ETag") == EntityTag(of: Array(Self.stored.utf8)).text)
        #expect(server.file == Self.stored)
    }

    @Test func aPatchWithTheCurrentIfMatchIsWritten() throws {
        try server.storeByHand(Self.stored)
        #expect(server.patch(#"{"goal": 1}"#, headers: ["If-Match": server.etag ?? ""]).status == 200)
        #expect(server.file?.contains("\"goal\": 1,") == true)
    }

    @Test func aPatchWithIfMatchWhenNothingIsStoredIs412() {
        let response = server.patch(#"{"goal": 1}"#, headers: ["If-Match": "*"])
        #expect(response.status == 412)
        #expect(response.text == #"{"error": "precondition failed: If-Match given but no settings are stored for this user"}"#)
    }

    @Test func aPatchOnAStoredFileThatIsNotJSONIs500AndChangesNothing() throws {
        try server.storeByHand("not json")
        let response = server.patch(#"{"a": 1}"#)
        #expect(response.status == 500)
        #expect(response.text == #"{"error": "the stored settings for this user are not valid JSON"}"#)
        #expect(server.file == "not json")
    }
}
