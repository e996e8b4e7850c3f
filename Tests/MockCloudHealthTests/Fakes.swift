import Foundation
import MockCloudClient
import MockCloudHealth
import MockCloudJSON
import MockCloudWire

/// Why a fake failed on purpose.
struct Injected: Error, Equatable, CustomStringConvertible {
    let what: String
    var description: String { what }
}

/// A health store in memory with HealthKit's rules as this library relies
/// on them: samples by source, replacement by sync identifier only at a
/// greater version, deletions by sync identifier of one source, an
/// anchored change log (every source's adds and deletes, in order), and a
/// lock that lets saves through but fails queries (Data Protection).
actor FakeHealthStore: HealthStore {
    nonisolated let ownBundleIdentifier = "com.example.mirror"
    /// What it holds now, every source's.
    private(set) var samples: [HealthSample] = []
    /// Every add and delete, in order: the anchored queries' log.
    private var log: [(added: HealthSample?, deleted: DeletedHealthSample?)] = []
    /// Every call, in order (`save`, `delete`, `query`, `changes`).
    private(set) var calls: [String] = []
    /// Queries fail (the phone locked); saves do not.
    var locked = false
    /// Saves fail (HealthKit refused them).
    var failSaves = false
    private(set) var deliveries: [HealthType: HealthDeliveryFrequency] = [:]
    private nonisolated let observers = Observers()
    /// Shared with the forwarding store of a test, for the order of steps.
    let journal: CallJournal?

    init(journal: CallJournal? = nil) { self.journal = journal }

    func setLocked(_ value: Bool) { locked = value }
    func setFailSaves(_ value: Bool) { failSaves = value }

    private func note(_ call: String) async {
        calls.append(call)
        await journal?.note(call)
    }

    static let lockedError = Injected(what: "Protected health data is inaccessible")

    /// Another app's (or this app's, when `source` is the own one) sample, as saved by it.
    func add(_ sample: HealthSample) {
        insert(sample)
    }

    private func insert(_ sample: HealthSample) {
        samples.append(sample)
        log.append((sample, nil))
    }

    /// Deletes a sample as its app would (Health's delete).
    func remove(uuid: UUID) {
        guard let index = samples.firstIndex(where: { $0.uuid == uuid }) else { return }
        let gone = samples.remove(at: index)
        log.append((nil, DeletedHealthSample(uuid: gone.uuid, syncIdentifier: gone.syncIdentifier)))
    }

    func save(_ new: [HealthSample]) async throws {
        await note("save \(new.count)")
        if failSaves { throw Injected(what: "save refused") }
        for var sample in new {
            sample.uuid = UUID()
            sample.sourceBundleIdentifier = ownBundleIdentifier
            sample.sourceName = "Mirror"
            if let id = sample.syncIdentifier,
                let held = samples.first(where: { $0.syncIdentifier == id && $0.sourceBundleIdentifier == ownBundleIdentifier })
            {
                guard (sample.syncVersion ?? 0) > (held.syncVersion ?? 0) else { continue }
                remove(uuid: held.uuid)
            }
            insert(sample)
        }
    }

    func deleteOwnSamples(of types: [HealthType], syncIdentifiers: Set<String>) async throws {
        await note("delete \(syncIdentifiers.sorted().joined(separator: ","))")
        for sample in samples
        where sample.sourceBundleIdentifier == ownBundleIdentifier && types.contains(sample.type)
            && sample.syncIdentifier.map(syncIdentifiers.contains) == true
        {
            remove(uuid: sample.uuid)
        }
    }

    func ownSamples(of types: [HealthType], syncIdentifierPrefix prefix: String) async throws -> [HealthSample] {
        await note("query \(prefix)")
        if locked { throw Self.lockedError }
        return samples.filter {
            $0.sourceBundleIdentifier == ownBundleIdentifier && types.contains($0.type) && ($0.syncIdentifier?.hasPrefix(prefix) ?? false)
        }
    }

    func changes(of type: HealthType, after anchor: [UInt8]?, limit: Int) async throws -> HealthChanges {
        await note("changes \(type)")
        if locked { throw Self.lockedError }
        let start = anchor.map { Int(String(decoding: $0, as: UTF8.self))! } ?? 0
        var added: [HealthSample] = []
        var deleted: [DeletedHealthSample] = []
        var position = start
        while position < log.count, added.count + deleted.count < limit {
            let entry = log[position]
            position += 1
            if let sample = entry.added, sample.type == type { added.append(sample) }
            // Deleted objects carry no type here; a real store reports them under the type queried.
            if let gone = entry.deleted, wasOfType(gone.uuid, type) { deleted.append(gone) }
        }
        return HealthChanges(added: added, deleted: deleted, anchor: Array(String(position).utf8))
    }

    private func wasOfType(_ uuid: UUID, _ type: HealthType) -> Bool {
        log.contains { $0.added?.uuid == uuid && $0.added?.type == type }
    }

    func enableBackgroundDelivery(for type: HealthType, frequency: HealthDeliveryFrequency) async throws {
        deliveries[type] = frequency
    }

    /// Set synchronously, as HealthKit's `execute` starts a query at once.
    nonisolated func observe(_ type: HealthType, onUpdate: @escaping @Sendable ((any Error)?, @escaping @Sendable () -> Void) -> Void) {
        observers.set(type, onUpdate)
    }

    var observed: Set<HealthType> { observers.types }

    /// `atCompletion` runs when the handler calls HealthKit's completion.
    func fire(_ type: HealthType, error: (any Error)? = nil, atCompletion: @escaping @Sendable () -> Void = {}) async {
        guard let handler = observers.handler(type) else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            handler(error) {
                atCompletion()
                done.resume()
            }
        }
    }

    /// How many `changes` queries were made.
    var queries: Int { calls.filter { $0.hasPrefix("changes") }.count }

    /// This app's samples by sync identifier: value and version.
    var own: [String: (value: Double, version: Int64?)] {
        Dictionary(uniqueKeysWithValues: samples.filter { $0.sourceBundleIdentifier == ownBundleIdentifier }.compactMap { sample in
            sample.syncIdentifier.map { ($0, (sample.value, sample.syncVersion)) }
        })
    }
}

/// The order of calls across fakes.
actor CallJournal {
    private(set) var entries: [String] = []
    func note(_ entry: String) { entries.append(entry) }
    func clear() { entries = [] }
}

/// The app's own store after HealthKitScans: keeps what it is forwarded.
actor ForwardedStore: ChangeApplier {
    private(set) var anchor: Anchor?
    private(set) var pages = 0
    var failNext = false
    let journal: CallJournal?

    init(journal: CallJournal? = nil) { self.journal = journal }

    func setFailNext() { failNext = true }

    func savedAnchor() async throws -> Anchor? { anchor }

    func apply(_ changes: ChangePage, saving anchor: Anchor?) async throws {
        await journal?.note("forward")
        if failNext {
            failNext = false
            throw Injected(what: "killed before the app's store took the page")
        }
        pages += 1
        if let anchor { self.anchor = anchor }
    }
}

/// What the fake engine left pending.
struct LeftOver: PendingChanges {
    var isEmpty: Bool
}

/// The engine as HealthImport and SyncLifecycle see it: a queue that
/// coalesces by id as SyncEngine's does, every call recorded, and steps
/// that can be made to fail (a kill before or after the enqueue is durable).
actor FakeEngine: SyncEngineLink {
    nonisolated let stateDirectory: URL
    /// What is queued, by id (a later change replaces an unsent one).
    private(set) var queue: [MessageID: UploadItem] = [:]
    /// Every enqueue call's items, in order.
    private(set) var enqueued: [[UploadItem]] = []
    private(set) var nudges = 0
    private(set) var network: [Bool] = []
    /// The next enqueue throws: before anything is on disk (`before`), or
    /// after (`after`: the process died once the queue was durable).
    enum Kill { case before, after }
    var kill: Kill?
    /// How syncUntilIdle ends: left empty, left something, throws, or waits until cancelled.
    enum Idle { case idle, leftSome, fails, waitsForCancel }
    var idle = Idle.idle
    private(set) var cancelledSyncs = 0
    let journal: CallJournal?

    init(stateDirectory: String, journal: CallJournal? = nil) {
        self.stateDirectory = URL(fileURLWithPath: stateDirectory)
        self.journal = journal
    }

    func setKill(_ value: Kill?) { kill = value }
    func setIdle(_ value: Idle) { idle = value }

    func enqueue(_ items: [UploadItem]) async throws {
        if kill == .before {
            kill = nil
            throw Injected(what: "killed before the enqueue")
        }
        enqueued.append(items)
        for item in items { queue[item.id] = item }
        await journal?.note("enqueue \(items.count)")
        if kill == .after {
            kill = nil
            throw Injected(what: "killed after the enqueue")
        }
    }

    func syncNow() async { nudges += 1 }

    func syncUntilIdle(within limit: Duration) async throws -> LeftOver {
        switch idle {
        case .idle: return LeftOver(isEmpty: true)
        case .leftSome: return LeftOver(isEmpty: false)
        case .fails: throw Injected(what: "the state cannot be written")
        case .waitsForCancel:
            do {
                try await Task.sleep(for: .seconds(3_600))
            } catch {
                cancelledSyncs += 1
                throw error
            }
            return LeftOver(isEmpty: false)
        }
    }

    func networkChanged(available: Bool) async { network.append(available) }

    /// Every id enqueued more than once with a different change: what the
    /// box would not absorb (an id at the same version with another body is
    /// a new seq, and wakes every follower).
    var conflictingRepeats: [MessageID] {
        var first: [MessageID: UploadItem] = [:]
        var repeats: [MessageID] = []
        for item in enqueued.joined() {
            if let seen = first[item.id], seen != item { repeats.append(item.id) }
            first[item.id] = first[item.id] ?? item
        }
        return repeats
    }
}

/// A feed page as the engine hands it to a ChangeApplier.
func page(
    _ messages: [(id: String, version: Int64, body: String)], deleted: [String] = [], anchor seq: Int64,
    fullRead: Bool = false, hasMore: Bool = false, startsResync: Bool = false, liveIDs: [String]? = nil
) throws -> ChangePage {
    let envelopes = try messages.enumerated().map { index, message in
        Envelope(
            id: MessageID(message.id)!, version: message.version, seq: seq - Int64(messages.count - index), source: "mirror",
            serverReceivedAt: "20260518T044304.134233Z", body: try JSONText(validating: message.body).value)
    }
    let feed = FeedPage(
        messages: envelopes, deleted: deleted.enumerated().map { Deletion(id: MessageID($1)!, seq: seq + Int64($0)) },
        anchor: Anchor(generation: "00000000000000a1", epoch: 0, seq: seq), hasMore: hasMore)
    return ChangePage(page: feed, isFullRead: fullRead, startsResync: startsResync, liveIDs: liveIDs.map { Set($0.map { MessageID($0)! }) })
}

/// The observer queries a fake store runs, by type.
final class Observers: @unchecked Sendable {
    typealias Handler = @Sendable ((any Error)?, @escaping @Sendable () -> Void) -> Void
    private let lock = NSLock()
    private var handlers: [HealthType: Handler] = [:]

    func set(_ type: HealthType, _ handler: @escaping Handler) {
        lock.lock()
        handlers[type] = handler
        lock.unlock()
    }

    func handler(_ type: HealthType) -> Handler? {
        lock.lock()
        defer { lock.unlock() }
        return handlers[type]
    }

    var types: Set<HealthType> {
        lock.lock()
        defer { lock.unlock() }
        return Set(handlers.keys)
    }
}
