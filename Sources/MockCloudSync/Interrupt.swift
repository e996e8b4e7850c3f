import Dispatch
import MockCloudSystem

/// Runs `work` in a task that SIGINT (Ctrl-C) or SIGTERM cancels, so that a
/// command that runs until interrupted (`pull --follow`, `push --watch`) stops its waiting
/// request, says what it did and exits with its status instead of dying.
func cancellingOnInterrupt(_ work: @escaping @Sendable () async -> Int32) async -> Int32 {
    let task = Task { await work() }
    let sources = Sys.takeOverInterrupts().map { number -> any DispatchSourceSignal in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { task.cancel() }
        source.resume()
        return source
    }
    defer { for source in sources { source.cancel() } }
    return await task.value
}
