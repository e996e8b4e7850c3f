import Foundation
import MockCloudHealth
import MockCloudTestSupport
import Testing

/// The phone's comings and goings, as the engine hears of them.
@Suite(.timeLimit(.minutes(1))) struct SyncLifecycleTests {
    let directory: TemporaryDirectory
    let engine: FakeEngine
    let lifecycle: SyncLifecycle

    init() throws {
        directory = try TemporaryDirectory(prefix: "mockcloud-health")
        engine = FakeEngine(stateDirectory: directory.path)
        lifecycle = SyncLifecycle(engine: engine)
    }

    @Test(arguments: [
        (true, true, false, NetworkState.available),  // Wi-Fi or wired
        (true, false, false, .unavailable),  // cellular only: the box is not there
        (false, false, false, .unavailable),
        (false, true, true, .localNetworkRefused),
        (false, false, true, .localNetworkRefused),
    ])
    func aPathIsAvailableOnlyOverWiFiOrWiredAndALocalNetworkRefusalIsItsOwnState(
        _ satisfied: Bool, _ wifiOrWired: Bool, _ denied: Bool, _ state: NetworkState
    ) {
        #expect(NetworkState.of(satisfied: satisfied, wifiOrWired: wifiOrWired, localNetworkDenied: denied) == state)
    }

    @Test func aPathChangeTellsTheEngineAndTheApp() async {
        await lifecycle.pathChanged(.available)
        await lifecycle.pathChanged(.unavailable)
        await lifecycle.pathChanged(.localNetworkRefused)
        #expect(await engine.network == [true, false, false])
        var states = lifecycle.networkStates.makeAsyncIterator()
        let state = await states.next()
        #expect(state == .localNetworkRefused)
        #expect(state?.message?.contains("Local Network") == true, "the sentence the app shows says what to allow")
        #expect(NetworkState.available.message == nil)
    }

    @Test func becomingActiveSyncsNow() async {
        await lifecycle.becameActive()
        #expect(await engine.nudges == 1)
    }

    /// One background refresh with a fake task: its expiration handler,
    /// its completions, the next one scheduled.
    final class Refresh: @unchecked Sendable {
        let lock = NSLock()
        var expire: (@Sendable () -> Void)?
        var completions: [Bool] = []
        var scheduled = 0

        func run(_ lifecycle: SyncLifecycle) -> Task<Void, Never> {
            lifecycle.refresh(
                expire: { handler in self.locked { self.expire = handler } },
                complete: { success in self.locked { self.completions.append(success) } },
                scheduleNext: { self.locked { self.scheduled += 1 } })
        }

        func locked<T>(_ body: () -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }
    }

    @Test(arguments: [(FakeEngine.Idle.idle, true), (.leftSome, false), (.fails, false)])
    func aRefreshSyncsUntilIdleCompletesOnceAndSchedulesTheNext(_ idle: FakeEngine.Idle, _ success: Bool) async {
        await engine.setIdle(idle)
        let refresh = Refresh()
        await refresh.run(lifecycle).value
        #expect(refresh.locked { refresh.completions } == [success])
        #expect(refresh.locked { refresh.scheduled } == 1)
    }

    @Test func anExpiredRefreshCancelsTheSyncAndCompletesOnceUnsuccessfully() async {
        await engine.setIdle(.waitsForCancel)
        let refresh = Refresh()
        let task = refresh.run(lifecycle)
        let expire = refresh.locked { refresh.expire }
        #expect(expire != nil, "the task's expiration handler is set")
        expire?()
        await task.value
        #expect(refresh.locked { refresh.completions } == [false])
        #expect(await engine.cancelledSyncs == 1, "the sync in flight was cancelled")
        #expect(refresh.locked { refresh.scheduled } == 1, "the next refresh is asked for even when this one expired")
    }
}
