import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

@Suite struct InboxFeedTests {
    @Test func anEmptyInboxWithoutAnchorHasAnEmptyFeed() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed()
        #expect(response.status == 200)
        #expect(response.inboxBody == #"{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}"#)
        #expect(inbox.feed("anchor=0.0.0&limit=5").inboxBody == response.inboxBody)
        #expect(!FileManager.default.fileExists(atPath: inbox.inboxPath))
    }

    @Test func feedWithoutAnchorListsEveryIDOnceInItsLatestStateOldestFirst() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", #"{"v": 1}"#)
        _ = inbox.put("b", #"{"v": 1}"#)
        _ = inbox.put("c", #"{"v": 1}"#, device: "phone")
        _ = inbox.put("a", #"{"v": 2}"#, version: "1")
        _ = inbox.delete("b")
        _ = inbox.put("d", #"{"v": 1}"#)
        let generation = try inbox.generation()
        let c = InboxSandbox.envelope("c", seq: 3, source: "phone", body: #"{"v": 1}"#)
        let a = InboxSandbox.envelope("a", version: 1, seq: 4, body: #"{"v": 2}"#)
        let d = InboxSandbox.envelope("d", seq: 6, body: #"{"v": 1}"#)
        #expect(inbox.feed().inboxBody == """
            {"messages": [\(c), \(a), \(d)], "deleted": [{"id": "b", "seq": 5}], \
            "anchor": "\(generation).6", "hasMore": false}
            """)
        // From an anchor, only what came after it.
        #expect(inbox.feed("anchor=\(generation).4").inboxBody == """
            {"messages": [\(d)], "deleted": [{"id": "b", "seq": 5}], "anchor": "\(generation).6", "hasMore": false}
            """)
        // At the newest anchor: nothing, and the anchor stays.
        #expect(inbox.feed("anchor=\(generation).6").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).6", "hasMore": false}
            """)
    }

    @Test(arguments: [1, 2, 3, 5, 9, 10, 11, 1000])
    func pagingWithLimitReturnsEveryChangeExactlyOnceAndHasMoreIsExact(limit: Int) throws {
        let inbox = try InboxSandbox()
        let ids = (0..<10).map { "m\($0)" }
        for id in ids { _ = inbox.put(id, #"{"first": true}"#) }
        // Replacements move three ids to the end; a deletion adds a tombstone.
        for id in ["m2", "m5", "m0"] { _ = inbox.put(id, #"{"first": false}"#) }
        _ = inbox.delete("m7")
        // Oldest first, by seq: m1 m3 m4 m6 m8 m9 m2 m5 m0 (-m7).
        let expectedOrder = ["m1", "m3", "m4", "m6", "m8", "m9", "m2", "m5", "m0", "-m7"]

        var anchor: String?
        var order: [String] = []
        var pages = 0
        while true {
            let response = inbox.feed("limit=\(limit)" + (anchor.map { "&anchor=" + $0 } ?? ""))
            try #require(response.status == 200)
            let page = try response.inboxObject()
            let messages = InboxJSON.array(page["messages"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
            let deleted = InboxJSON.array(page["deleted"]).compactMap { InboxJSON.string($0.objectValue?["id"]) }
            let hasMore = page["hasMore"] == .bool(true)
            order += messages + deleted.map { "-" + $0 }
            pages += 1
            let remaining = expectedOrder.count - order.count
            // hasMore exactly when something is left; every page but the last is full.
            #expect(hasMore == (remaining > 0), "page \(pages)")
            #expect(messages.count + deleted.count == (hasMore ? limit : min(limit, expectedOrder.count - (pages - 1) * limit)))
            let next = try #require(InboxJSON.string(page["anchor"]))
            anchor = next
            if !hasMore || pages > 20 { break }
        }
        #expect(pages == (expectedOrder.count + limit - 1) / limit)
        // Within a page messages and deletions are listed apart; across pages, order holds.
        #expect(order.filter { !$0.hasPrefix("-") } == expectedOrder.filter { !$0.hasPrefix("-") })
        #expect(Set(order) == Set(expectedOrder))
        #expect(order.count == expectedOrder.count)
        let generation = try inbox.generation()
        #expect(anchor == "\(generation).14")
        #expect(inbox.feed("limit=\(limit)&anchor=\(try #require(anchor))").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).14", "hasMore": false}
            """)
    }

    @Test func defaultLimitIs100() throws {
        let inbox = try InboxSandbox()
        for i in 0..<101 { _ = inbox.put("m\(i)", "{}") }
        let page = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(page["messages"]).count == 100)
        #expect(page["hasMore"] == .bool(true))
        #expect(page["anchor"] == .string("\(try inbox.generation()).100"))
        let rest = try inbox.feed("anchor=\(try inbox.generation()).100").inboxObject()
        #expect(InboxJSON.array(rest["messages"]).count == 1)
        #expect(rest["hasMore"] == .bool(false))
    }

    @Test(arguments: ["1", "2", "1000"])
    func limitFrom1To1000IsAccepted(limit: String) throws {
        let inbox = try InboxSandbox()
        for id in ["a", "b"] { _ = inbox.put(id, "{}") }
        let response = inbox.feed("limit=\(limit)")
        #expect(response.status == 200)
        let page = try response.inboxObject()
        #expect(InboxJSON.array(page["messages"]).count == min(Int(limit)!, 2))
    }

    @Test(arguments: ["0", "1001", "abc", "-1", "", "+5", "1e2", " 1", "1000.0", "99999999999999999999"])
    func limitOutside1To1000IsRejected(limit: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.feed("limit=" + (limit.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? limit))
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "invalid limit \\\"\(limit)\\\": must be an integer from 1 to 1000"))
    }

    @Test(arguments: [
        "xyz", "1", "zz.1", "a.b", ".1", "1.", "a.1", "a.1.2.3", "A.0.1", "00000000000000000.0.1", "a.0.-1", "a.0.+1",
        "a.0.99999999999999999999", "a.0. 1", "0x1.0.1", "a..1", "a.x.1",
    ])
    func malformedAnchorIsRejected(anchor: String) throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        let response = inbox.feed("anchor=" + (anchor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? anchor))
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error(
            "malformed anchor: pass back exactly the anchor a previous page returned"))
    }

    @Test func malformedQueryIsRejected() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("anchor=%zz")
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error("malformed query string"))
    }

    @Test func anAnchorNewerThanAnythingStoredIs410() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        _ = inbox.put("b", "{}")
        let generation = try inbox.generation()
        #expect(inbox.feed("anchor=\(generation).2").status == 200)
        for anchor in ["\(generation).3", "\(generation).999999999999999999"] {
            let response = inbox.feed("anchor=" + anchor)
            #expect(response.status == 410)
            #expect(response.inboxBody == InboxSandbox.gone(.ahead, "anchor is newer than anything stored"))
        }
    }

    @Test func anAnchorOnAnInboxThatHoldsNothingIs410() throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("anchor=0123456789abcdef.0.3")
        #expect(response.status == 410)
        #expect(response.inboxBody == InboxSandbox.gone(.ahead, "anchor is newer than anything stored"))
    }

    @Test func anAnchorOfAWipedAndRecreatedInboxIs410() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("a", "{}")
        let old = try inbox.generation()
        try inbox.wipeInbox()
        for id in ["x", "y", "z"] { _ = inbox.put(id, "{}") }
        let new = try inbox.generation()
        #expect(new != old)
        let response = inbox.feed("anchor=\(old).1")
        #expect(response.status == 410)
        #expect(response.inboxBody == InboxSandbox.gone(.replaced, "anchor belongs to an inbox that no longer exists"))
        let fresh = try inbox.feed().inboxObject()
        #expect(InboxJSON.array(fresh["messages"]).count == 3)
        #expect(fresh["anchor"] == .string("\(new).3"))
        #expect(inbox.feed("anchor=\(new).1").status == 200)
    }

    @Test func excludeSourceLeavesOutThatDevicesMessagesButAdvancesTheAnchor() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m1", "{}", device: "dev-a")
        _ = inbox.put("m2", "{}", device: "dev-b")
        _ = inbox.put("m3", "{}", device: "dev-a")
        _ = inbox.put("m4", "{}")
        let generation = try inbox.generation()
        let m2 = InboxSandbox.envelope("m2", seq: 2, source: "dev-b", body: "{}")
        let m4 = InboxSandbox.envelope("m4", seq: 4, body: "{}")
        #expect(inbox.feed("exclude-source=dev-a").inboxBody == """
            {"messages": [\(m2), \(m4)], "deleted": [], "anchor": "\(generation).4", "hasMore": false}
            """)
        // One at a time: an excluded change neither fills a slot nor holds the anchor back.
        #expect(inbox.feed("exclude-source=dev-a&limit=1").inboxBody == """
            {"messages": [\(m2)], "deleted": [], "anchor": "\(generation).3", "hasMore": true}
            """)
        #expect(inbox.feed("exclude-source=dev-a&limit=1&anchor=\(generation).3").inboxBody == """
            {"messages": [\(m4)], "deleted": [], "anchor": "\(generation).4", "hasMore": false}
            """)
        // Only the device's own echoes after the anchor: an empty page past them.
        _ = inbox.put("m5", "{}", device: "dev-a")
        #expect(inbox.feed("exclude-source=dev-a&anchor=\(generation).4").inboxBody == """
            {"messages": [], "deleted": [], "anchor": "\(generation).5", "hasMore": false}
            """)
        // Another device, or no exclusion, sees it.
        #expect(inbox.feed("exclude-source=dev-b&anchor=\(generation).4").inboxBody == """
            {"messages": [\(InboxSandbox.envelope("m5", seq: 5, source: "dev-a", body: "{}"))], "deleted": [], \
            "anchor": "\(generation).5", "hasMore": false}
            """)
        // A deletion is not a message: the device's own deletions are still reported.
        _ = inbox.delete("m2", device: "dev-a")
        #expect(inbox.feed("exclude-source=dev-a&anchor=\(generation).5").inboxBody == """
            {"messages": [], "deleted": [{"id": "m2", "seq": 6}], "anchor": "\(generation).6", "hasMore": false}
            """)
    }

    @Test func hasMoreIsFalseWhenOnlyTheReadersOwnEchoesRemain() throws {
        // Exact hasMore (docs/API.md §4) also holds past a long run of excluded changes.
        let inbox = try InboxSandbox()
        _ = inbox.put("other", "{}", device: "dev-b")
        for i in 0..<150 { _ = inbox.put("echo", #"{"n": \#(i)}"#, device: "dev-a") }
        let generation = try inbox.generation()
        let response = inbox.feed("exclude-source=dev-a&limit=1&anchor=\(generation).1")
        #expect(response.status == 200)
        let page = try response.inboxObject()
        #expect(InboxJSON.array(page["messages"]).isEmpty)
        #expect(InboxJSON.array(page["deleted"]).isEmpty)
        #expect(page["hasMore"] == .bool(false), "\(response.inboxBody)")
    }

    @Test(arguments: ["", "a%20b", "caf%C3%A9", "a%2Fb", "a.b", String(repeating: "d", count: 129)])
    func invalidExcludeSourceIsRejected(device: String) throws {
        let inbox = try InboxSandbox()
        let response = inbox.feed("exclude-source=" + device)
        #expect(response.status == 400)
        #expect(response.inboxBody == InboxSandbox.error("invalid exclude-source shape"))
    }

    @Test func feedAnswersAreTheSameForHEAD() throws {
        let inbox = try InboxSandbox()
        _ = inbox.put("m", "{}")
        #expect(inbox.send("HEAD", "/inbox").inboxBody == inbox.feed().inboxBody)
        #expect(inbox.send("HEAD", "/inbox/m").inboxBody == inbox.get("m").inboxBody)
    }
}
