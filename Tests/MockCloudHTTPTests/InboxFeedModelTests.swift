import Foundation
import Glibc
@testable import MockCloudHTTP
import MockCloudJSON
@testable import MockCloudStore
import MockCloudSystem
import Synchronization
import Testing

/// SplitMix64: a fixed seed gives the same sequence on every run.
struct InboxSeededRandom: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An anchored reader as a client keeps one: its anchor and what it knows.
struct InboxFeedReader {
    let excluded: String?
    var anchor: String?
    /// id → the envelope text the feed gave.
    var state: [String: String] = [:]
    /// `id@seq` of every change received since the last restart: none twice.
    var received: Set<String> = []
    var restarts = 0

    init(excluding excluded: String? = nil) { self.excluded = excluded }

    /// Reads one page; returns `hasMore`. A 410 (compaction dropped deletions
    /// the reader has not seen) restarts the reader, as a client would.
    mutating func readPage(_ inbox: InboxSandbox, limit: Int) throws -> Bool {
        var query = "limit=\(limit)"
        if let anchor { query += "&anchor=" + anchor }
        if let excluded { query += "&exclude-source=" + excluded }
        let response = inbox.feed(query)
        if response.status == 410, anchor != nil {
            (anchor, state, received) = (nil, [:], [])
            restarts += 1
            return true
        }
        try #require(response.status == 200, "\(response.inboxBody)")
        let page = try response.inboxObject()
        let previous = anchor.flatMap { Int64($0.split(separator: ".").last ?? "") } ?? 0
        var lastSeq = previous
        var ids: Set<String> = []
        let messages = InboxJSON.array(page["messages"])
        let deleted = InboxJSON.array(page["deleted"])
        #expect(messages.count + deleted.count <= limit)
        for message in messages {
            let object = try #require(message.objectValue)
            let id = try #require(InboxJSON.string(object["id"]))
            let seq = try #require(InboxJSON.int(object["seq"]))
            #expect(seq > lastSeq, "messages oldest first, after the anchor")
            lastSeq = seq
            #expect(ids.insert(id).inserted, "\(id) twice in one page")
            #expect(received.insert("\(id)@\(seq)").inserted, "\(id)@\(seq) received twice")
            if let excluded { #expect(InboxJSON.string(object["source"]) != excluded) }
            state[id] = InboxJSON.text(message)
        }
        for deletion in deleted {
            let object = try #require(deletion.objectValue)
            let id = try #require(InboxJSON.string(object["id"]))
            let seq = try #require(InboxJSON.int(object["seq"]))
            #expect(seq > previous)
            #expect(ids.insert(id).inserted, "\(id) twice in one page")
            #expect(received.insert("\(id)@\(seq)").inserted, "\(id)@\(seq) received twice")
            state[id] = nil
        }
        let next = try #require(InboxJSON.string(page["anchor"]))
        let nextSeq = try #require(Int64(next.split(separator: ".").last ?? ""))
        #expect(nextSeq >= previous)
        anchor = next
        return page["hasMore"] == .bool(true)
    }

    /// Follows anchors until hasMore is false, then checks that it was exact.
    mutating func drain(_ inbox: InboxSandbox, limit: Int) throws {
        var pages = 0
        while try readPage(inbox, limit: limit) {
            pages += 1
            try #require(pages < 1000, "the reader never reached hasMore false; last anchor \(anchor ?? "none")")
        }
        let settled = anchor
        #expect(try readPage(inbox, limit: limit) == false)
        #expect(anchor == settled, "hasMore was false but more came")
    }
}

/// The compaction settings a model run uses.
enum InboxModelVariant: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case noCompaction, compactionKeepingTombstones, compactionDroppingTombstones

    var settings: InboxSettings {
        var settings = InboxSettings()
        settings.maxMessages = 6
        switch self {
        case .noCompaction: break
        case .compactionKeepingTombstones:
            settings.compactionMinimumRecords = 8
            settings.tombstoneHorizonSeconds = 86400
        case .compactionDroppingTombstones:
            settings.compactionMinimumRecords = 8
            settings.tombstoneHorizonSeconds = 0
        }
        return settings
    }

    var testDescription: String { rawValue }
}

@Suite struct InboxFeedModelTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64], InboxModelVariant.allCases)
    func readersFollowingAnchorsEndWithTheSameStateAsAFullRead(seed: UInt64, variant: InboxModelVariant) throws {
        var run = try InboxModelRun(variant: variant, seed: seed)
        for step in 0..<300 { try run.step(step) }
        try run.checkTheEnd()
    }
}

/// One seeded run of random writes, deletions, reads and feed pages against
/// an inbox, beside a model of what it must hold; readers follow the feed
/// as it goes.
struct InboxModelRun {
    struct Expected {
        var version: Int64
        var body: String
        var source: String?
        /// The envelope text the write answered with; nil once deleted.
        var envelope: String?
    }

    let variant: InboxModelVariant
    let settings: InboxSettings
    let inbox: InboxSandbox
    var random: InboxSeededRandom
    var model: [String: Expected] = [:]
    var lastSeq: Int64 = 0
    var counter = 0
    var readers = [InboxFeedReader(), InboxFeedReader(excluding: "dev-a")]
    let ids = (0..<10).map { "m\($0)" }
    let devices: [String?] = [nil, "dev-a", "dev-b"]

    init(variant: InboxModelVariant, seed: UInt64) throws {
        self.variant = variant
        settings = variant.settings
        inbox = try InboxSandbox(settings: settings, clockStep: 1_000_000)
        random = InboxSeededRandom(state: seed)
    }

    var live: Int { model.values.filter { $0.envelope != nil }.count }

    /// One random operation: half writes, then deletions, reads and feed pages.
    mutating func step(_ step: Int) throws {
        let roll = Int.random(in: 0..<100, using: &random)
        let device = devices.randomElement(using: &random)!
        if roll < 50 {
            try write(ids.randomElement(using: &random)!, from: device, step: step)
        } else if roll < 65 {
            delete(ids.randomElement(using: &random)!, from: device, step: step)
        } else if roll < 70 {
            read(ids.randomElement(using: &random)!, step: step)
        } else {
            let which = Int.random(in: 0..<readers.count, using: &random)
            _ = try readers[which].readPage(inbox, limit: Int.random(in: 1...4, using: &random))
        }
    }

    /// A PUT of a new, older, equal or newer version, and the answer the model expects.
    mutating func write(_ id: String, from device: String?, step: Int) throws {
        let current = model[id]
        var version = Int64.random(in: 0...3, using: &random)
        counter += 1
        var body = #"{"n": \#(counter)}"#
        if let current, current.envelope != nil {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: version = current.version - 1
            case 1: (version, body) = (current.version, current.body)
            case 2: version = current.version
            default: version = current.version + Int64.random(in: 1...2, using: &random)
            }
            version = max(version, 0)
        }
        let response = inbox.put(id, body, version: String(version), device: device)
        let isLive = current?.envelope != nil
        if !isLive && live >= settings.maxMessages {
            #expect(response.status == 507, "step \(step)")
        } else if isLive && version < current!.version {
            #expect(response.status == 409, "step \(step)")
        } else if isLive && version == current!.version && body == current!.body {
            #expect(response.status == 200, "step \(step)")
            #expect(response.inboxBody == current!.envelope, "step \(step): a retry changes nothing")
        } else {
            #expect(response.status == (isLive ? 200 : 201), "step \(step)")
            lastSeq += 1
            let object = try response.inboxObject()
            #expect(InboxJSON.int(object["seq"]) == lastSeq, "step \(step)")
            model[id] = Expected(version: version, body: body, source: device, envelope: response.inboxBody)
        }
    }

    /// A DELETE: 204 for a live message, 404 otherwise.
    mutating func delete(_ id: String, from device: String?, step: Int) {
        let response = inbox.delete(id, device: device)
        if model[id]?.envelope != nil {
            #expect(response.status == 204, "step \(step)")
            lastSeq += 1
            model[id]?.envelope = nil
        } else {
            #expect(response.status == 404, "step \(step)")
        }
    }

    /// A GET of one message: the envelope its write answered, or 404.
    func read(_ id: String, step: Int) {
        let response = inbox.get(id)
        if let envelope = model[id]?.envelope {
            #expect(response.inboxBody == envelope, "step \(step)")
        } else {
            #expect(response.status == 404, "step \(step)")
        }
    }

    /// Every reader drained (and a new one from the start) holds what the
    /// model holds; the echo-free one all but dev-a's own; seq never goes back.
    func checkTheEnd() throws {
        var everyone = readers + [InboxFeedReader()]
        for index in everyone.indices {
            try everyone[index].drain(inbox, limit: index == everyone.count - 1 ? 1000 : 3)
        }
        let latest = model.compactMapValues(\.envelope)
        #expect(everyone[0].state == latest)
        #expect(everyone[2].state == latest)
        #expect(everyone[2].restarts == 0)
        // The echo-free reader: everything not last written by dev-a, exactly.
        let echoFree = everyone[1].state
        for (id, expected) in model where expected.source != "dev-a" || expected.envelope == nil {
            #expect(echoFree[id] == expected.envelope, "\(id)")
        }
        #expect(Set(echoFree.keys).isSubset(of: Set(latest.keys)))
        for (id, envelope) in latest { #expect(inbox.get(id).inboxBody == envelope) }
        if variant == .noCompaction {
            #expect(inbox.logSize() == Int(lastSeq + 1) * ChangeLog.recordSize)
            #expect(everyone[0].restarts == 0 && everyone[1].restarts == 0)
        }
        if variant == .compactionKeepingTombstones {
            #expect(everyone[0].restarts == 0 && everyone[1].restarts == 0)
        }
        // Seq never goes back, whatever compaction removed.
        #expect(inbox.put("after-all", "{}").status == (live < settings.maxMessages ? 201 : 507))
        if live < settings.maxMessages {
            #expect(InboxJSON.int(try inbox.get("after-all").inboxObject()["seq"]) == lastSeq + 1)
        }
    }
}
