import Foundation
import MockCloudClient

/// The engine kept running as the phone comes and goes:
/// - the network path (`NWPathMonitor`): Wi-Fi or wired is
///   `networkChanged(available: true)`, anything else false; a Local
///   Network permission the user refused is its own state, with the
///   sentence the app should show (`networkStates`);
/// - the foreground: the app becoming active is `syncNow()`;
/// - background refresh (`BGAppRefreshTask`): `syncUntilIdle(within:)`
///   inside the task's time, cancelled when the task expires, the task set
///   completed, the next one scheduled.
///
/// On platforms without them (Linux) `start()` and
/// `registerBackgroundRefresh(identifier:)` do nothing; the core they call
/// (`pathChanged`, `becameActive`, `refresh`) is the same everywhere.
public final class SyncLifecycle: Sendable {
    nonisolated let engine: any SyncEngineLink
    /// Each network state as the path changes (the newest one kept for a
    /// reader that comes late).
    public let networkStates: AsyncStream<NetworkState>
    let stateEmitter: AsyncStream<NetworkState>.Continuation
    /// The time a background refresh gives the engine: a `BGAppRefreshTask`
    /// has about 30 s, and `syncUntilIdle(within:)` may take 1 s more.
    public static let refreshBudget: Duration = .seconds(25)
    /// The earliest a next refresh is asked for.
    public static let refreshInterval: TimeInterval = 15 * 60
    let platform = PlatformHooks()

    public init(engine: some SyncEngineLink) {
        self.engine = engine
        var emitter: AsyncStream<NetworkState>.Continuation?
        networkStates = AsyncStream(bufferingPolicy: .bufferingNewest(1)) { emitter = $0 }
        stateEmitter = emitter!
    }

    deinit {
        stateEmitter.finish()
        platform.stop()
    }

    /// At launch, before it ends (BackgroundTasks requires it then): runs
    /// each `BGAppRefreshTask` of `identifier` (listed in the app's
    /// `BGTaskSchedulerPermittedIdentifiers`), and schedules the first.
    public func registerBackgroundRefresh(identifier: String) {
        platform.registerRefresh(identifier: identifier, lifecycle: self)
    }

    /// Follows the network path and the app's activation.
    public func start() {
        platform.start(lifecycle: self)
    }

    /// The path changed: the engine told whether the box may be reached,
    /// and the state handed out.
    public func pathChanged(_ state: NetworkState) async {
        stateEmitter.yield(state)
        await engine.networkChanged(available: state == .available)
    }

    /// The app became active: try now.
    public func becameActive() async {
        await engine.syncNow()
    }

    /// One background refresh: `scheduleNext` at once (a refresh that is
    /// killed still leaves the next one asked for), then
    /// `syncUntilIdle(within: refreshBudget)`; `complete` is called once,
    /// with true when it ended with nothing pending, false when it failed,
    /// left something pending, or `expire`'s handler ran first (which
    /// cancels it). Returns the task, for a caller that waits.
    @discardableResult
    public func refresh(
        expire: (_ handler: @escaping @Sendable () -> Void) -> Void, complete: @escaping @Sendable (_ success: Bool) -> Void,
        scheduleNext: () -> Void
    ) -> Task<Void, Never> {
        scheduleNext()
        let once = Once()
        let engine = engine
        let task = Task {
            let success: Bool
            do {
                success = try await engine.syncUntilIdle(within: Self.refreshBudget).isEmpty
            } catch {
                success = false
            }
            if once.claim() { complete(success) }
        }
        expire {
            task.cancel()
            if once.claim() { complete(false) }
        }
        return task
    }
}

/// What the network path means for the engine.
public struct NetworkState: Sendable, Hashable, CustomStringConvertible {
    let name: String
    /// A sentence for the app to show; nil when there is nothing to say.
    public let message: String?

    /// Wi-Fi or wired: the box may be reached.
    public static let available = NetworkState(name: "available", message: nil)
    /// No path, or only cellular: the box is not reached from here.
    public static let unavailable = NetworkState(name: "unavailable", message: nil)
    /// The user refused the app access to the local network: the box can
    /// never be reached until they allow it.
    public static let localNetworkRefused = NetworkState(
        name: "localNetworkRefused",
        message: "This app cannot reach your mirror: allow Local Network for it in Settings › Privacy & Security › Local Network.")

    public var description: String { name }

    /// The state of a path: satisfied over Wi-Fi or wired is available;
    /// unsatisfied because the Local Network permission was refused is
    /// its own state; anything else is unavailable.
    public static func of(satisfied: Bool, wifiOrWired: Bool, localNetworkDenied: Bool) -> NetworkState {
        if localNetworkDenied { return .localNetworkRefused }
        return satisfied && wifiOrWired ? .available : .unavailable
    }
}

/// True the first time only, from any thread.
final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false

    func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if claimed { return false }
        claimed = true
        return true
    }
}
