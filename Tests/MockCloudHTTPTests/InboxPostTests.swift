import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxPostTests {
    static func isLowercaseUUIDv4(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12],
            text.allSatisfy({ $0 == "-" || ("0"..."9").contains($0) || ("a"..."f").contains($0) })
        else { return false }
        return groups[2].first == "4" && "89ab".contains(groups[3].first!)
    }

    @Test func postStoresUnderAFreshUUIDWithLocation() throws {
        let inbox = try InboxSandbox()
        let response = inbox.post(#"{"kind": "weight"}"#, version: "2", device: "phone")
        #expect(response.status == 201)
        let location = try #require(response.header("Location"))
        #expect(location.hasPrefix("/inbox/"))
        let id = String(location.dropFirst("/inbox/".count))
        #expect(Self.isLowercaseUUIDv4(id), "\(id)")
        let expected = InboxSandbox.envelope(id, version: 2, seq: 1, source: "phone", body: #"{"kind": "weight"}"#)
        #expect(response.inboxBody == expected)
        #expect(inbox.send("GET", location).inboxBody == expected)
        #expect(inbox.messageFiles() == [id + ".json"])
    }

    @Test func everyPostGetsItsOwnID() throws {
        let inbox = try InboxSandbox()
        let locations = (0..<20).compactMap { _ in inbox.post("{}").header("Location") }
        #expect(Set(locations).count == 20)
        #expect(inbox.messageFiles().count == 20)
    }
}
