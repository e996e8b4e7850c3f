import Foundation
import MockCloudClient
import MockCloudClientTestSupport
import MockCloudJSON
import MockCloudWire
import Testing

/// The client's side of the per-field merge: the edit per field it sends,
/// the times it reads, and the launch reconciliation that merges per field
/// when the box keeps member times.
@Suite struct SettingsPerFieldTests {
    static let stored = #"{"weightCalibrationFactor": 1.0, "unitSystem": "imperial", "heightCm": 175, "updatedAt": "20260518T100500.000000Z", "serverReceivedAt": "20260518T100600.000000Z"}"#
    static let times = #"{"heightCm": {"at": "20260518T100000.000000Z"}, "unitSystem": {"at": "20260518T100500.000000Z", "device": "phone-b"}, "weightCalibrationFactor": {"at": "20260518T100000.000000Z"}}"#
    static let timedAnswer = FakeServer.json(
        200, #"{"document": \#(stored), "times": \#(times)}"#, headers: [("etag", "\"t1\""), ("x-merge", "fields")])
    static func at(_ text: String) -> Date { Date(timeIntervalSince1970: Double(Timestamp.parse(text)!) / 1_000_000) }

    static func header(_ request: TransportRequest, _ name: String) -> String? {
        request.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func anEditPerFieldIsAPatchWithXMergeFieldsItsDeviceAndTheEditTimeAsUpdatedAt() async throws {
        let server = FakeServer { _, _ in
            FakeServer.json(200, Self.stored, headers: [("etag", "\"m1\""), ("x-merge", "fields")])
        }
        let merged = try await client(server, device: "phone-a")
            .patchSettings(fields: body(#"{"weightCalibrationFactor": 0.999, "gone": null}"#), editedAt: Self.at("2026-05-18T10:01:00.5Z"))
        #expect(merged == FieldMerge(settings: BoxSettings(document: body(Self.stored), etag: "\"m1\""), kept: []))
        let sent = try #require(await server.requests.first)
        #expect(sent.method == "PATCH" && sent.target == "/user/settings")
        #expect(Self.header(sent, "Content-Type") == "application/merge-patch+json")
        #expect(Self.header(sent, "X-Merge") == "fields")
        #expect(Self.header(sent, "X-Device-Id") == "phone-a")
        #expect(Self.header(sent, "If-Match") == nil, "a per-field edit needs no condition")
        #expect(String(decoding: sent.body, as: UTF8.self)
            == #"{"weightCalibrationFactor": 0.999, "gone": null, "updatedAt": "20260518T100100.500000Z"}"#)
    }

    @Test func theMembersTheBoxKeptComeBackByName() async throws {
        let server = FakeServer { _, _ in
            FakeServer.json(200, Self.stored, headers: [("x-merge", "fields"), ("x-merge-kept", #"unitSystem, "two words", "caf\u00e9""#)])
        }
        let merged = try await client(server).patchSettings(fields: body(#"{"unitSystem": "metric"}"#), editedAt: Self.at("2026-05-18T10:02:00Z"))
        #expect(merged.kept == ["unitSystem", "two words", "caf\u{e9}"])
    }

    @Test func aKeptListTooLongForAHeaderIsCompletedFromTheTimes() async throws {
        let server = FakeServer { request, _ in
            request.method == "PATCH"
                ? FakeServer.json(200, Self.stored, headers: [("x-merge", "fields"), ("x-merge-kept", "unitSystem, *")])
                : Self.timedAnswer
        }
        let merged = try await client(server, device: "phone-a").patchSettings(
            fields: body(#"{"unitSystem": "metric", "heightCm": 180, "weightCalibrationFactor": 1.0}"#),
            editedAt: Self.at("2026-05-18T10:00:00Z"))
        // heightCm and the factor hold this edit's instant but by no device: another edit's.
        #expect(merged.kept == ["unitSystem", "heightCm", "weightCalibrationFactor"])
        #expect(await server.requests.map(\.method) == ["PATCH", "GET"])
    }

    @Test func aBoxThatMergedTheWholeDocumentIsABadAnswer() async throws {
        let server = FakeServer { _, _ in FakeServer.json(200, Self.stored, headers: [("etag", "\"x\"")]) }
        await #expect(throws: ClientError.badAnswer(
            "the box merged the whole document, not per field: it is a MockCloud without X-Merge")) {
            try await client(server).patchSettings(fields: body(#"{"a": 1}"#), editedAt: Date())
        }
    }

    @Test func fieldsWithTheirOwnUpdatedAtAreRefusedBeforeAnythingIsSent() async throws {
        let server = FakeServer { _, _ in FakeServer.json(500, "{}") }
        await #expect(throws: ClientError.invalidArgument("fields holds updatedAt: pass the time of the edits as editedAt")) {
            try await client(server).patchSettings(fields: body(#"{"a": 1, "updatedAt": "x"}"#), editedAt: Date())
        }
        #expect(await server.requests.isEmpty)
    }

    @Test func aLostAnswerIsSentAgainSinceTheSameEditChangesNothing() async throws {
        let server = FakeServer { _, n in
            n == 1 ? .failure(.connection("reset")) : FakeServer.json(200, Self.stored, headers: [("x-merge", "fields")])
        }
        _ = try await client(server).patchSettings(fields: body(#"{"a": 1}"#), editedAt: Date())
        #expect(await server.requests.map(\.method) == ["PATCH", "PATCH"])
    }

    @Test func theTimesAreReadWithTheDocument() async throws {
        let server = FakeServer { _, _ in Self.timedAnswer }
        let timed = try #require(try await client(server).settingsWithTimes())
        #expect(timed.settings == BoxSettings(document: body(Self.stored), etag: "\"t1\""))
        #expect(timed.times?["unitSystem"] == MemberTime(editedAt: Self.at("2026-05-18T10:05:00Z"), device: DeviceID("phone-b")))
        #expect(timed.times?["heightCm"] == MemberTime(editedAt: Self.at("2026-05-18T10:00:00Z")))
        #expect(Self.header(try #require(await server.requests.first), "X-Merge") == "fields")
    }

    @Test func aBoxWithoutMemberTimesAnswersTheDocumentAlone() async throws {
        let server = FakeServer { _, _ in FakeServer.json(200, Self.stored, headers: [("etag", "\"p\"")]) }
        let timed = try #require(try await client(server).settingsWithTimes())
        #expect(timed == TimedSettings(settings: BoxSettings(document: body(Self.stored), etag: "\"p\""), times: nil))
    }

    // MARK: - The launch reconciliation

    @Test func withMemberTimesOnTheBoxTheLocalEditsAreSentPerFieldOldestFirst() async throws {
        let merged = FakeServer.json(200, Self.stored, headers: [("etag", "\"m\""), ("x-merge", "fields")])
        let server = FakeServer { request, _ in request.method == "GET" ? Self.timedAnswer : merged }
        let local = body(#"{"weightCalibrationFactor": 0.999, "unitSystem": "metric", "updatedAt": "2026-05-18T10:01:00Z"}"#)
        let result = try await client(server, device: "phone-a").reconcileSettings(local: local, editedFields: [
            "weightCalibrationFactor": Self.at("2026-05-18T10:01:00Z"), "heightCm": Self.at("2026-05-18T09:00:00Z"),
            "updatedAt": Self.at("2026-05-18T10:01:00Z"),
        ])
        #expect(result == .mergedPerField(BoxSettings(document: body(Self.stored), etag: "\"m\""), kept: []))
        let patches = await server.requests.filter { $0.method == "PATCH" }.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(patches == [
            #"{"heightCm": null, "updatedAt": "20260518T090000.000000Z"}"#,
            #"{"weightCalibrationFactor": 0.999, "updatedAt": "20260518T100100.000000Z"}"#,
        ])
    }

    @Test func withNothingEditedLocallyTheBoxsDocumentIsInSyncOrNewer() async throws {
        let server = FakeServer { _, _ in Self.timedAnswer }
        let same = try await client(server).reconcileSettings(local: body(Self.stored), editedFields: [:])
        #expect(same == .inSync(BoxSettings(document: body(Self.stored), etag: "\"t1\"")))
        let other = try await client(server).reconcileSettings(local: body(#"{"unitSystem": "metric"}"#), editedFields: [:])
        #expect(other == .boxIsNewer(BoxSettings(document: body(Self.stored), etag: "\"t1\"")))
        #expect(await server.requests.allSatisfy { $0.method == "GET" })
    }

    @Test func aBoxWithoutMemberTimesIsReconciledByTheWholeDocument() async throws {
        let older = #"{"updatedAt": "2026-01-01T10:00:00Z", "heightCm": 175}"#
        let newer = #"{"updatedAt": "2026-01-01T10:05:00Z", "heightCm": 180}"#
        let server = FakeServer { request, _ in
            request.method == "GET"
                ? FakeServer.json(200, older, headers: [("etag", "\"a\"")])
                : FakeServer.json(200, newer, headers: [("etag", "\"c\"")])
        }
        let result = try await client(server).reconcileSettings(local: body(newer), editedFields: ["heightCm": Date()])
        #expect(result == .pushedLocal(BoxSettings(document: body(newer), etag: "\"c\"")))
        #expect(await server.requests.map(\.method) == ["GET", "GET", "PUT"])
    }

    @Test func anUnreachableBoxMidwayKeepsTheEditsForNextTime() async throws {
        let server = FakeServer { request, _ in
            request.method == "GET" ? Self.timedAnswer : .failure(.connection("Connection refused"))
        }
        let result = try await client(server, attempts: 2)
            .reconcileSettings(local: body(#"{"heightCm": 180}"#), editedFields: ["heightCm": Date()])
        guard result.kind == .unreachable, result.error?.code == .unavailable else { Issue.record("\(result)"); return }
    }
}
