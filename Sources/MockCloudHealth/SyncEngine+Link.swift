import MockCloudClient

/// The engine itself is what an app passes: its own calls are the link.
extension SyncEngine: SyncEngineLink {}

extension SyncEngine.Pending: PendingChanges {}
