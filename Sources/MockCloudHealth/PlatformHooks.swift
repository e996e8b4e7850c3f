import Foundation

#if canImport(Network) && canImport(BackgroundTasks) && canImport(UIKit)
import BackgroundTasks
import Network
import UIKit

/// The Apple side of `SyncLifecycle`: the path monitor, the activation
/// notification and the background refresh task.
final class PlatformHooks: @unchecked Sendable {
    private let lock = NSLock()
    private var monitor: NWPathMonitor?
    private var activation: (any NSObjectProtocol)?

    func start(lifecycle: SyncLifecycle) {
        lock.lock()
        defer { lock.unlock() }
        guard monitor == nil else { return }
        let monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [weak lifecycle] path in
            let state = NetworkState.of(
                satisfied: path.status == .satisfied,
                wifiOrWired: path.usesInterfaceType(.wifi) || path.usesInterfaceType(.wiredEthernet),
                localNetworkDenied: path.status == .unsatisfied && path.unsatisfiedReason == .localNetworkDenied)
            guard let lifecycle else { return }
            Task { await lifecycle.pathChanged(state) }
        }
        monitor.start(queue: DispatchQueue(label: "MockCloudHealth.path"))
        self.monitor = monitor
        activation = NotificationCenter.default.addObserver(
            forName: UIApplication.didBecomeActiveNotification, object: nil, queue: nil
        ) { [weak lifecycle] _ in
            guard let lifecycle else { return }
            Task { await lifecycle.becameActive() }
        }
    }

    func stop() {
        lock.lock()
        defer { lock.unlock() }
        monitor?.cancel()
        monitor = nil
        if let activation { NotificationCenter.default.removeObserver(activation) }
        activation = nil
    }

    func registerRefresh(identifier: String, lifecycle: SyncLifecycle) {
        let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { [weak lifecycle] task in
            guard let lifecycle else { return task.setTaskCompleted(success: false) }
            let refresh = UncheckedTask(task)
            lifecycle.refresh(
                expire: { handler in refresh.task.expirationHandler = handler },
                complete: { success in refresh.task.setTaskCompleted(success: success) },
                scheduleNext: { Self.schedule(identifier) })
        }
        if registered { Self.schedule(identifier) }
    }

    /// Asks for the next refresh, no earlier than `SyncLifecycle.refreshInterval`.
    static func schedule(_ identifier: String) {
        let request = BGAppRefreshTaskRequest(identifier: identifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: SyncLifecycle.refreshInterval)
        try? BGTaskScheduler.shared.submit(request)
    }
}

/// A `BGTask` handed to the handlers that set its expiration and completion
/// (BackgroundTasks calls them from any thread, as it documents).
struct UncheckedTask: @unchecked Sendable {
    let task: BGTask
    init(_ task: BGTask) { self.task = task }
}

/// The protected data becoming available (the phone unlocked).
enum Unlock {
    static func observe(_ action: @escaping @Sendable () -> Void) {
        _ = NotificationCenter.default.addObserver(
            forName: UIApplication.protectedDataDidBecomeAvailableNotification, object: nil, queue: nil
        ) { _ in action() }
    }
}
#else
/// Without Network, BackgroundTasks and UIKit (Linux): nothing to follow.
final class PlatformHooks: Sendable {
    func start(lifecycle: SyncLifecycle) {}
    func stop() {}
    func registerRefresh(identifier: String, lifecycle: SyncLifecycle) {}
}

/// Without UIKit: no unlock to observe.
enum Unlock {
    static func observe(_ action: @escaping @Sendable () -> Void) {}
}
#endif
