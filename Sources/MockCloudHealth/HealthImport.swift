import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// Other sources' body samples, backed up to the box: for each type, an
/// observer query with background delivery, and an anchored query from the
/// anchor it keeps in the engine's state directory.
///
/// Each delta, in this order:
/// 1. this app's own samples are skipped (by bundle identifier; deleted
///    objects, which carry no source, by their `nm-` sync identifier);
/// 2. the rest become uploads: a sample is `hk-<UUID>` at its sync version
///    (or 1) with a canonical JSON body, a deleted object the deletion of
///    `hk-<UUID>`;
/// 3. they are enqueued (on disk), then the anchor is saved, then
///    HealthKit's completion handler is called (on every path, errors
///    included: HealthKit stops background delivery after three misses).
///
/// A crash between 3's steps sends nothing twice that the box would not
/// absorb: the same id, version and body. A query that fails (a locked
/// phone) leaves the anchor where it was and is retried at the next unlock
/// or launch. The first import reads at most `pageSize` samples a query.
public actor HealthImport {
    nonisolated let healthStore: any HealthStore
    nonisolated let engine: any SyncEngineLink
    /// The types imported.
    public nonisolated let types: [HealthType]
    nonisolated let anchors: ImportAnchors
    /// At most this many samples (added and deleted) a query.
    public static let pageSize = 1_000
    private var started = false
    /// Types whose last import failed: tried again at the next unlock.
    private var failed: Set<HealthType> = []
    /// One import of a type at a time; the others wait their turn.
    private var busy: Set<HealthType> = []
    private var waiting: [HealthType: [CheckedContinuation<Void, Never>]] = [:]

    public init(healthStore: some HealthStore, engine: some SyncEngineLink, types: [HealthType]) {
        self.healthStore = healthStore
        self.engine = engine
        self.types = types
        anchors = ImportAnchors(stateDirectory: engine.stateDirectory)
    }

    /// At every launch: an observer query for each type (its updates,
    /// the first of which HealthKit sends when the query starts, import
    /// the type's changes, then call HealthKit's completion handler),
    /// background delivery (`.immediate` for body mass, hourly
    /// for the rest), and a retry at each unlock of what failed while
    /// locked. Throws the first type's refusal of background delivery (the
    /// entitlement missing), once every observer is set up.
    public func start() async throws {
        guard !started else { return }
        started = true
        for type in types {
            healthStore.observe(type) { [self] error, done in
                Task {
                    defer { done() }
                    _ = try? await self.importChanges(of: type)
                }
            }
        }
        Unlock.observe { [weak self] in
            guard let self else { return }
            Task { await self.retryFailed() }
        }
        var refusal: (any Error)?
        for type in types {
            do {
                try await healthStore.enableBackgroundDelivery(for: type, frequency: type == .bodyMass ? .immediate : .hourly)
            } catch {
                refusal = refusal ?? error
            }
        }
        if let refusal { throw refusal }
    }

    /// Imports every type's changes since its anchor, then tries the engine
    /// (`syncNow`) when anything was queued. Returns how many uploads were
    /// queued; throws the first failure after trying every type.
    @discardableResult
    public func importChanges() async throws -> Int {
        var queued = 0
        var first: (any Error)?
        for type in types {
            do { queued += try await importChanges(of: type) } catch { first = first ?? error }
        }
        if let first { throw first }
        return queued
    }

    /// The types whose last import failed (the phone was locked), imported again.
    public func retryFailed() async {
        for type in types where failed.contains(type) { _ = try? await importChanges(of: type) }
    }

    /// Imports `type`'s changes since its anchor, a page at a time: each
    /// page's uploads enqueued, then its anchor saved. Returns how many
    /// uploads were queued. On a failure the anchor stays at the last page
    /// whose uploads are queued; the type is tried again at the next unlock.
    @discardableResult
    public func importChanges(of type: HealthType) async throws -> Int {
        await take(type)
        defer { give(type) }
        do {
            var anchor = try anchors.load(type)
            var queued = 0
            while true {
                let changes = try await healthStore.changes(of: type, after: anchor, limit: Self.pageSize)
                let items = try uploads(changes)
                if !items.isEmpty { try await engine.enqueue(items) }
                try anchors.save(changes.anchor, for: type)
                anchor = changes.anchor
                queued += items.count
                if changes.added.count + changes.deleted.count < Self.pageSize { break }
            }
            failed.remove(type)
            if queued > 0 { await engine.syncNow() }
            return queued
        } catch {
            failed.insert(type)
            throw error
        }
    }

    /// A delta as uploads, this app's own samples left out.
    func uploads(_ changes: HealthChanges) throws -> [UploadItem] {
        let own = healthStore.ownBundleIdentifier
        var items: [UploadItem] = []
        for sample in changes.added where sample.sourceBundleIdentifier != own {
            items.append(.put(try Self.id(sample.uuid), version: sample.syncVersion ?? 1, body: Self.body(sample)))
        }
        for gone in changes.deleted where !(gone.syncIdentifier?.hasPrefix("nm-") ?? false) {
            items.append(.delete(try Self.id(gone.uuid)))
        }
        return items
    }

    /// `hk-<UUID>`.
    static func id(_ uuid: UUID) throws -> MessageID {
        guard let id = MessageID("hk-" + uuid.uuidString) else { throw ClientError.invalidArgument("no message id for sample \(uuid)") }
        return id
    }

    /// The sample's canonical JSON body: the same sample makes the same
    /// bytes every time (a re-import is absorbed by the box, not a new
    /// `seq`). `{"type","value","unit","start","end","source"}`, the value
    /// in the type's HealthKit unit, the dates as the box writes its own
    /// (UTC, microseconds: `20260518T044304.134233Z`).
    static func body(_ sample: HealthSample) -> JSONText {
        func time(_ date: Date) -> JSONValue { .string(Timestamp.format(BoxClient.micros(date))) }
        return JSONText(.object(JSONObject(uniqueMembers: [
            JSONMember("type", .string(sample.type.name)),
            JSONMember("value", .number(sample.value.isFinite ? "\(sample.value)" : "0")),
            JSONMember("unit", .string(sample.type.unit)),
            JSONMember("start", time(sample.start)),
            JSONMember("end", time(sample.end)),
            JSONMember("source", .string(sample.sourceName)),
        ])))
    }

    private func take(_ type: HealthType) async {
        while busy.contains(type) {
            await withCheckedContinuation { waiting[type, default: []].append($0) }
        }
        busy.insert(type)
    }

    private func give(_ type: HealthType) {
        busy.remove(type)
        if var queue = waiting[type], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[type] = queue
            next.resume()
        }
    }
}
