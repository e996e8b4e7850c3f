import Foundation
import MockCloudClient

/// What this library needs of the sync engine: the seam between it and
/// `SyncEngine` (which conforms, SyncEngine+Link.swift), so that its core is
/// tested with a fake engine.
public protocol SyncEngineLink: Sendable {
    /// What `syncUntilIdle(within:)` says is left (`SyncEngine.Pending`).
    associatedtype Left: PendingChanges
    /// Where the engine keeps its state; `HealthImport` keeps its anchors
    /// in a folder of it.
    var stateDirectory: URL { get }
    /// Queues `items`; when it returns they are on disk.
    func enqueue(_ items: [UploadItem]) async throws
    /// Tries now.
    func syncNow() async
    /// Sends what is pending and reads the feed until idle, or the time is
    /// up; returns what is still pending.
    func syncUntilIdle(within limit: Duration) async throws -> Left
    /// The network is there (true) or not (false).
    func networkChanged(available: Bool) async
}

/// What is still to send after a sync: nothing, or something.
public protocol PendingChanges: Sendable {
    var isEmpty: Bool { get }
}
