import MockCloudConfig
import MockCloudStore
import MockCloudSystem

/// What a request that waits for a change (`?wait=`) needs from the process
/// that runs it: room in its time limit for the wait, and the descriptor its
/// answer goes to, whose reader going away (fcgiwrap stopped) ends the wait.
package struct WaitHost: Sendable {
    /// Makes room for a wait of this many seconds in the time limit.
    let allow: @Sendable (_ seconds: Int) -> Void
    /// Where the answer goes; `nil`: nobody to watch.
    let output: FileDescriptor?

    package init(allow: @escaping @Sendable (_ seconds: Int) -> Void, output: FileDescriptor?) {
        self.allow = allow
        self.output = output
    }

    /// A CGI program's: the alarm moves out by the wait, so that the work
    /// after it keeps `CGIProgram.timeLimitSeconds`; the answer goes to stdout.
    package static let program = WaitHost(allow: { CGIProgram.allowWait(seconds: $0) }, output: .standardOutput)
    /// In a test or a tool: no alarm to move, no reader to watch.
    package static let none = WaitHost(allow: { _ in }, output: nil)

    /// The limit of a wait of `seconds`, starting now, in one of the box's
    /// places for waiting requests.
    func limit(seconds: Int) -> WaitLimit {
        allow(seconds)
        return WaitLimit(seconds: seconds, output: output, places: Capacity.waitingAtOnce)
    }
}
