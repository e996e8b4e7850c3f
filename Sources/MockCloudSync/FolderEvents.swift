import Dispatch
import Foundation
import MockCloudClient
import MockCloudSystem

/// The watched folder's changes for `push --watch`: collected on a queue
/// of their own as the kernel reports them (a `FolderWatch`), so that they
/// pile up while a request is in flight, and taken all at once by the
/// push's next round. No timer: a change is handed over as soon as it is
/// read, and everything that came meanwhile goes with it.
final class FolderEvents: @unchecked Sendable {
    private let lock = NSLock()
    private let watch: FolderWatch
    private var source: (any DispatchSourceRead)?
    /// Guarded by `lock`: what was reported and not yet taken.
    private var pending = FolderChanges()
    /// Guarded by `lock`: reading the events failed.
    private var failure: ClientError?
    /// Guarded by `lock`: `next()` waiting for a change.
    private var waiter: CheckedContinuation<FolderChanges, any Error>?

    /// Starts watching `directory`'s message files (`Folder.isMessage`).
    init(directory: String) throws(ClientError) {
        do {
            watch = try FolderWatch(directory, wanted: Folder.isMessage)
        } catch let error as SystemError {
            switch error.errno {
            case .tooManyOpenFiles, .noSpace:
                throw .local("cannot watch \(directory): the system's inotify limits are reached "
                    + "(sysctl fs.inotify.max_user_instances, fs.inotify.max_user_watches): raise them")
            default:
                throw .local("cannot watch the folder \(directory): \(error.errno)")
            }
        } catch {
            throw .local("cannot watch the folder \(directory): \(error)")
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: watch.fd.rawValue, queue: DispatchQueue(label: "mockcloud-sync.watch"))
        let watch = watch
        source.setEventHandler { [weak self] in self?.collect() }
        source.setCancelHandler { watch.close() }
        self.source = source
        source.activate()
    }

    /// Stops watching (the descriptor is closed once the queue lets go of it).
    func stop() {
        source?.cancel()
        source = nil
    }

    /// Everything reported since the last call, at least one change: waits
    /// for one when there is none. Throws `CancellationError` when the task
    /// is cancelled while it waits.
    func next() async throws -> FolderChanges {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if let failure {
                    lock.unlock()
                    continuation.resume(throwing: failure)
                } else if !pending.isEmpty {
                    let changes = pending
                    pending = FolderChanges()
                    lock.unlock()
                    continuation.resume(returning: changes)
                } else if Task.isCancelled {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiter = continuation
                    lock.unlock()
                }
            }
        } onCancel: {
            lock.lock()
            let waiting = waiter
            waiter = nil
            lock.unlock()
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// Everything reported since the last call, without waiting (often nothing).
    func take() throws(ClientError) -> FolderChanges {
        lock.lock()
        defer { lock.unlock() }
        if let failure { throw failure }
        let changes = pending
        pending = FolderChanges()
        return changes
    }

    /// True when a change waits to be taken.
    var hasPending: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !pending.isEmpty || failure != nil
    }

    /// On the watch's queue: reads what the kernel queued, and hands it to
    /// a waiting `next()`.
    private func collect() {
        lock.lock()
        do {
            try watch.read(into: &pending)
        } catch {
            failure = .local("cannot read the changes of the folder \(watch.path): \(error)")
        }
        var resume: (() -> Void)?
        if let waiting = waiter {
            if let failure {
                resume = { waiting.resume(throwing: failure) }
            } else if !pending.isEmpty {
                let changes = pending
                pending = FolderChanges()
                resume = { waiting.resume(returning: changes) }
            }
            if resume != nil { waiter = nil }
        }
        lock.unlock()
        resume?()
    }
}
