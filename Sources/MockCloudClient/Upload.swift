import MockCloudJSON
import MockCloudWire

/// One change to send: a message at a version, or a deletion.
public struct UploadItem: Sendable, Equatable {
    /// Frozen on purpose: the wire's bulk item is a put or a deletion
    /// (docs/API.md §8); another kind of change would be another API.
    @frozen
    public enum Change: Sendable, Equatable {
        case put(version: Int64, body: JSONText)
        case delete
    }

    public var id: MessageID
    public var change: Change

    /// Stores `body` under `id` at `version` (HealthKit's sync version; the
    /// server keeps the highest, and the same version with another body
    /// replaces it).
    public static func put(_ id: MessageID, version: Int64 = 0, body: JSONText) -> UploadItem {
        UploadItem(id: id, change: .put(version: version, body: body))
    }

    /// Deletes `id` (a tombstone tells feed readers).
    public static func delete(_ id: MessageID) -> UploadItem {
        UploadItem(id: id, change: .delete)
    }

    /// A HealthKit sample as an upload: its sync identifier
    /// (`HKMetadataKeySyncIdentifier`, like `nm-<scan>-weight`) is the id,
    /// its sync version (`HKMetadataKeySyncVersion`) the version. Throws
    /// for an identifier the server would refuse or a negative version.
    public static func sample(syncIdentifier: String, syncVersion: Int, body: JSONText) throws -> UploadItem {
        guard SyncVersion.range.contains(Int64(clamping: syncVersion)) else {
            throw ClientError.invalidArgument("sync version \(syncVersion) is not an integer from 0 to 18 digits")
        }
        return .put(try messageID(syncIdentifier), version: Int64(syncVersion), body: body)
    }

    /// The deletion of the sample with this sync identifier (HealthKit's
    /// deleted objects carry it in their metadata).
    public static func deletion(syncIdentifier: String) throws -> UploadItem {
        .delete(try messageID(syncIdentifier))
    }

    /// The item as the wire's bulk request carries it.
    var wire: BulkRequest.Item {
        switch change {
        case .put(let version, let body): return .put(id, version: version, body: body.bytes)
        case .delete: return .delete(id)
        }
    }

    private static func messageID(_ syncIdentifier: String) throws -> MessageID {
        guard let id = MessageID(syncIdentifier) else {
            throw ClientError.invalidArgument("sync identifier \(String(reflecting: syncIdentifier)) is not an id the server takes:"
                + " 1 to \(MessageID.maxLength) of A-Z a-z 0-9 . _ : -")
        }
        return id
    }
}

/// What became of one item: the bulk result's status, as the single
/// request would have answered (docs/API.md §8).
///
/// Frozen on purpose: the server holds the item (stored, deleted), holds a
/// higher version (conflict), or refused it; a refusal carries its status,
/// so a status a later box adds is a `rejected` an app already handles.
@frozen
public enum UploadOutcome: Sendable, Equatable {
    /// 201 (`created`) or 200: the server holds this version and body, at `seq`.
    case stored(seq: Int64, created: Bool)
    /// 204, or 404 (nothing there: already deleted, e.g. by an earlier
    /// attempt whose answer was lost): the id is gone.
    case deleted(seq: Int64?)
    /// 409: the server holds a higher version; nothing was written.
    case conflict(current: Envelope)
    /// 400, 413 or 507 for this item (or an item refused before sending,
    /// status 400 or 413): nothing was written.
    case rejected(status: Int, error: String)

    /// True when the server now holds what the item asked for.
    public var isDone: Bool {
        switch self {
        case .stored, .deleted: return true
        case .conflict, .rejected: return false
        }
    }
}

extension BoxClient {
    /// Sends `items` as `POST /inbox:bulk` requests within the server's
    /// limits, in order, and returns one outcome per item, in item order.
    ///
    /// A request whose answer is lost (a cut connection, a restart, a 5xx)
    /// is sent again unchanged: items are idempotent by id and version, so
    /// a repeat converges (201 may come back as 200, 204 as 404). 429 and
    /// 503 wait the `Retry-After` seconds. Throws only when a request fails
    /// as a whole after every retry; the items of requests already answered
    /// are durable on the server and were reported to `afterEach`.
    ///
    /// - Parameter afterEach: called after each request's answer with a
    ///   range of `items` and their outcomes: the place to record progress
    ///   durably. The ranges cover every item once: an item refused before
    ///   sending (a body over `maxItemBodyBytes`: 413) is reported with the
    ///   request beside it, or, when nothing is sent at all, in one call
    ///   before `upload` returns.
    public func upload(
        _ items: [UploadItem],
        afterEach: (_ range: Range<Int>, _ outcomes: ArraySlice<UploadOutcome>) async throws -> Void = { _, _ in }
    ) async throws -> [UploadOutcome] {
        var outcomes = [UploadOutcome?](repeating: nil, count: items.count)
        let limits = configuration.limits
        let frame = BulkRequest.opening.count + BulkRequest.closing.count, separator = BulkRequest.separator.count
        // Each request's items, and the range of items its answer reports:
        // the ranges follow each other, so items refused here are reported
        // with the request beside them.
        var batches: [[Int]] = []
        var ranges: [Range<Int>] = []
        var batch: [Int] = []
        var size = frame
        for (index, item) in items.enumerated() {
            if case .put(_, let json) = item.change, json.bytes.count > limits.maxItemBodyBytes {
                outcomes[index] = .rejected(
                    status: 413, error: "body of \(json.bytes.count) bytes is over the \(limits.maxItemBodyBytes)-byte limit")
                continue
            }
            let encoded = BulkRequest.encode(item.wire).count
            if batch.count == limits.maxItems || (!batch.isEmpty && size + separator + encoded > limits.maxRequestBytes) {
                batches.append(batch)
                ranges.append((ranges.last?.upperBound ?? 0)..<index)
                batch = []
                size = frame
            }
            size += encoded + (batch.isEmpty ? 0 : separator)
            batch.append(index)
        }
        if !batch.isEmpty {
            batches.append(batch)
            ranges.append((ranges.last?.upperBound ?? 0)..<items.count)
        } else if !items.isEmpty {
            // Nothing to send: every item was refused here.
            try await afterEach(0..<items.count, ArraySlice(outcomes.map { $0! }))
        }

        /// The request body of batch `k`, made when it is sent.
        func body(_ k: Int) -> [UInt8] { BulkRequest.body(batches[k].map { BulkRequest.encode(items[$0].wire) }) }

        // Up to `uploadsInFlight` requests at once; a batch that names an id
        // of one still in flight waits for it, so that items of one id are
        // applied in order.
        try await withThrowingTaskGroup(of: (Int, [UploadOutcome]).self) { group in
            var inFlight: [Int: Set<MessageID>] = [:]
            func finishOne() async throws {
                guard let (k, results) = try await group.next() else { return }
                inFlight[k] = nil
                for (index, result) in zip(batches[k], results) { outcomes[index] = result }
                try await afterEach(ranges[k], ArraySlice(ranges[k].map { outcomes[$0]! }))
            }
            for k in batches.indices {
                let ids = batches[k].map { items[$0].id }
                let named = Set(ids)
                while inFlight.count >= configuration.uploadsInFlight
                    || inFlight.values.contains(where: { !$0.isDisjoint(with: named) })
                {
                    try await finishOne()
                }
                let request = body(k)
                inFlight[k] = named
                group.addTask { (k, try await self.sendBulk(request, ids: ids)) }
            }
            while !inFlight.isEmpty { try await finishOne() }
        }
        return outcomes.map { $0! }
    }

    /// One `POST /inbox:bulk`; the results, checked against the ids sent.
    func sendBulk(_ body: [UInt8], ids: [MessageID]) async throws -> [UploadOutcome] {
        let request = TransportRequest(
            .post, Endpoint.bulk.path, headers: [(HTTPHeader.contentType.name, HeaderValue.json)], body: body)
        let response = try await exchange(request, .safe)
        guard response.status == 200 else { throw Self.refusal(response) }
        guard let results = BulkResult.results(of: .object(try Self.object(response))), results.count == ids.count else {
            throw ClientError.badAnswer("a bulk answer without one result per item")
        }
        return try zip(ids, results).map { id, result in
            guard let result, result.id == .string(id.rawValue) else {
                throw ClientError.badAnswer("a bulk result that does not match its item \(id)")
            }
            return try Self.outcome(result)
        }
    }

    /// What a bulk result says of its item.
    static func outcome(_ result: BulkResult) throws -> UploadOutcome {
        switch result.status {
        case 200, 201:
            guard let seq = result.seq else { throw ClientError.badAnswer("a stored item without seq") }
            return .stored(seq: seq, created: result.status == 201)
        case 204: return .deleted(seq: result.seq)
        case 404: return .deleted(seq: nil)
        case 409:
            guard let current = result.current else { throw ClientError.badAnswer("a 409 without its current envelope") }
            return .conflict(current: current)
        default: return .rejected(status: result.status, error: result.error ?? "status \(result.status)")
        }
    }
}
