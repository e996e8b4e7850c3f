import Foundation
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// Last writer wins by the client's `updatedAt`, compared as instants.
@Suite struct SettingsLastWriterWinsTests {
    let server: SettingsServer

    init() throws { server = try SettingsServer() }

    @Test func putOlderUpdatedAtIsRejectedWithCurrentDocument() throws {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z", "v": 1}"#)
        let before = try #require(server.fileBytes)
        let response = server.send("PUT", #"{"updatedAt": "20260518T044304.094Z", "v": 2}"#)
        #expect(response.status == 409)
        #expect(response.text
            == #"{"error": "updatedAt 20260518T044304.094Z is older than the stored updatedAt 20260518T044304.095Z; "#
            + #"nothing was written", "current": {"updatedAt": "20260518T044304.095Z", "v": 1, "#
            + #""serverReceivedAt": "20260518T044304.134233Z"}}"#)
        #expect(response.headers == [.init("ETag", EntityTag(of: before).text)])
        #expect(server.fileBytes == before)
    }

    @Test(arguments: ["20260518T044304.095Z", "20260518T044304.096Z", "2027-01-01T00:00:00Z"])
    func putEqualOrNewerUpdatedAtIsWritten(_ incoming: String) {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z", "v": 1}"#)
        let response = server.send("PUT", #"{"updatedAt": "\#(incoming)", "v": 2}"#)
        #expect(response.status == 200)
        #expect(server.file == """
            {
              "updatedAt": "\(incoming)",
              "v": 2,
              "serverReceivedAt": "20260518T044304.134233Z"
            }
            """)
    }

    /// (stored, incoming, written): the forms are instants, not text.
    @Test(arguments: [
        ("20260518T044304.095Z", "2026-05-18T06:43:04.095+02:00", true),
        ("2026-05-18T06:43:04.095+02:00", "20260518T044304.095Z", true),
        ("2026-05-18T04:43:04.095Z", "20260518T064304.095+0200", true),
        ("20260517T234304.095-0500", "2026-05-18T04:43:04.095Z", true),
        ("20260518T044304.095Z", "2026-05-18T06:43:04.094+02:00", false),
        ("2026-05-18T04:43:04Z", "2026-05-18T05:43:04+02:00", false),
        ("2026-05-18T05:43:04+02:00", "2026-05-18T04:43:04Z", true),
        ("20260518T044304.095000Z", "20260518T044304.0949999Z", false),
        ("20260518T044304.095000Z", "20260518T044304.0950009Z", true),
        ("20260518T044304.095001Z", "20260518T044304.095Z", false),
    ])
    func updatedAtFormsAreComparedAsInstants(_ stored: String, _ incoming: String, _ written: Bool) {
        server.send("PUT", #"{"updatedAt": "\#(stored)", "v": 1}"#)
        let response = server.send("PUT", #"{"updatedAt": "\#(incoming)", "v": 2}"#)
        #expect(response.status == (written ? 200 : 409))
        #expect(server.file?.contains(written ? "\"v\": 2" : "\"v\": 1") == true)
    }

    /// (stored updatedAt, incoming updatedAt) as JSON text; `nil` leaves the field out.
    @Test(arguments: [
        (#""yesterday""#, #""2000-01-01T00:00:00Z""#),
        (#""20260518T044304.095Z""#, #""garbage""#),
        (#""20260518T044304.095Z""#, "0"),
        (#""20260518T044304.095Z""#, "null"),
        (#""20260518T044304.095Z""#, #"["2000-01-01T00:00:00Z"]"#),
        ("1779079384", #""2000-01-01T00:00:00Z""#),
        (#""2026-05-18T04:43:04""#, #""2000-01-01T00:00:00Z""#),
        (nil, #""2000-01-01T00:00:00Z""#),
        (#""20260518T044304.095Z""#, nil),
    ] as [(String?, String?)])
    func anUnparseableOrMissingUpdatedAtOnEitherSideIsWritten(_ stored: String?, _ incoming: String?) {
        server.send("PUT", stored.map { #"{"updatedAt": \#($0), "v": 1}"# } ?? #"{"v": 1}"#)
        let response = server.send("PUT", incoming.map { #"{"updatedAt": \#($0), "v": 2}"# } ?? #"{"v": 2}"#)
        #expect(response.status == 200)
        #expect(server.file?.contains("\"v\": 2") == true)
    }

    @Test func aStoredFileThatIsNotJSONNeverBlocksAWrite() throws {
        try server.storeByHand(#"{"updatedAt": "2099-01-01T00:00:00Z", "#)
        #expect(server.send("PUT", #"{"updatedAt": "2000-01-01T00:00:00Z"}"#).status == 200)
    }

    @Test func preconditionsAreCheckedBeforeLastWriterWins() throws {
        server.send("PUT", #"{"updatedAt": "20260518T044304.095Z"}"#)
        let older = #"{"updatedAt": "2000-01-01T00:00:00Z"}"#
        #expect(server.send("PUT", older, headers: ["If-Match": "\"0000000000000000\""]).status == 412)
        #expect(server.send("PUT", older, headers: ["If-Match": server.etag ?? ""]).status == 409)
    }
}
