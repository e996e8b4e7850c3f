import Foundation

/// A wake-up call for the engine's waits: `fire()` ends every wait under
/// way, and a wait that starts after a `fire()` it has not seen (by
/// `count`) ends at once, so no call is missed between a look and a wait.
final class Wakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var fired: UInt64 = 0
    private var nextWaiter: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// How many times it was fired.
    var count: UInt64 { locked { fired } }

    func fire() {
        let woken = locked { () -> [CheckedContinuation<Void, Never>] in
            fired += 1
            defer { waiters = [:] }
            return Array(waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once it was fired after `seen` fires, or the task is cancelled.
    func wait(after seen: UInt64) async {
        let id = locked { () -> UInt64 in
            nextWaiter += 1
            return nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = locked { () -> Bool in
                    if fired != seen || Task.isCancelled { return true }
                    waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            locked { waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// `sleep(duration)`, ended early by a `fire()`; throws what `sleep`
    /// throws (cancellation).
    func sleep(for duration: Duration, using sleep: @escaping @Sendable (Duration) async throws -> Void) async throws {
        let seen = count
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sleep(duration) }
            group.addTask { await self.wait(after: seen) }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// Whether the network is there, as the app last said (`networkChanged`):
/// while it is not, the engine's attempts wait here, and no backoff grows.
final class NetworkGate: Sendable {
    private let open = Guarded(true)
    private let changed = Wakeup()

    var isOpen: Bool { open.read { $0 } }

    func set(open: Bool) {
        self.open.read { $0 = open }
        changed.fire()
    }

    /// Returns once the network is there; throws `CancellationError` when the task is cancelled.
    func waitOpen() async throws {
        while true {
            let seen = changed.count
            if isOpen { return }
            await changed.wait(after: seen)
            try Task.checkCancellation()
        }
    }
}

/// The engine's transfers in flight (every request through its transport,
/// a feed's prefetch included), for `close()` to wait until the last has
/// ended before it lets the directory and the process go.
final class TransferCount: Sendable {
    private let inFlight = Guarded(0)
    private let ended = Wakeup()

    func begin() { inFlight.read { $0 += 1 } }

    func end() {
        inFlight.read { $0 -= 1 }
        ended.fire()
    }

    /// Returns once no transfer is in flight.
    func drained() async {
        while true {
            let seen = ended.count
            if inFlight.read({ $0 == 0 }) { return }
            await ended.wait(after: seen)
        }
    }
}

/// The caller's transport, its transfers counted.
struct CountedTransport: HTTPTransport {
    let base: any HTTPTransport
    let transfers: TransferCount

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        transfers.begin()
        defer { transfers.end() }
        return try await base.send(request)
    }
}

/// Which of the engine's loops have nothing to do now: the uploads and the
/// settings edits (nothing queued, or only what the box deferred), the feed
/// (read to its end, waiting for the next change). `syncUntilIdle` waits
/// for all three.
final class IdleWatch: Sendable {
    enum Loop: CaseIterable { case uploads, edits, feed }
    private struct State {
        var idle: Set<Loop> = []
        /// Why the loops ended, once they did.
        var end: (any Error)?
    }
    private let state = Guarded(State())
    private let changed = Wakeup()

    /// The loops ended, with `error`.
    func ended(_ error: any Error) {
        state.read { $0.end = error }
        changed.fire()
    }

    func set(_ loop: Loop, _ isIdle: Bool) {
        let moved = state.read { state in
            isIdle ? state.idle.insert(loop).inserted : state.idle.remove(loop) != nil
        }
        if moved { changed.fire() }
    }

    /// Marks `loops` busy until they look again; all of them (new loops): the end forgotten too.
    func reset(_ loops: [Loop] = Loop.allCases) {
        if loops.count == Loop.allCases.count { state.read { $0.end = nil } }
        for loop in loops { set(loop, false) }
    }

    /// Returns once every loop is idle (nil) or the loops ended (why), or
    /// the task is cancelled (nil).
    func allIdle() async -> (any Error)? {
        while !Task.isCancelled {
            let seen = changed.count
            let (all, end) = state.read { ($0.idle.count == Loop.allCases.count, $0.end) }
            if let end { return end }
            if all { return nil }
            await changed.wait(after: seen)
        }
        return nil
    }
}

/// The engine's clock for its client's waits: the caller's clock, a wait
/// ended early by `nudge` (`syncNow()`, the network back), and after it a
/// wait for the network while the app says there is none.
struct EngineClock<Base: Clock>: Clock where Base.Duration == Duration {
    typealias Instant = Base.Instant
    let base: Base
    let nudge: Wakeup
    let network: NetworkGate

    var now: Instant { base.now }
    var minimumResolution: Duration { base.minimumResolution }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let base = base
        try await nudge.sleep(for: base.now.duration(to: deadline)) { try await base.sleep(until: base.now.advanced(by: $0), tolerance: nil) }
        try await network.waitOpen()
    }

}

/// `clock` (an existential, opened here) under the engine's wake-ups.
func engineClock<Base: Clock>(_ clock: Base, nudge: Wakeup, network: NetworkGate) -> any Clock<Duration>
where Base.Duration == Duration {
    EngineClock(base: clock, nudge: nudge, network: network)
}

/// A value behind a lock, read and changed in closures that do not suspend.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func read<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
