import MockCloudConfig
import MockCloudStore
import MockCloudSystem

/// What a request that waits for a change (`?wait=`) needs from the process
/// that runs it: room in its time limit for the wait, the ways its answer
/// goes, whose other end going away (fcgiwrap stopped, the client left)
/// ends the wait, and how many waits one client address may hold.
package struct WaitHost: Sendable {
    /// Makes room for a wait of this many seconds in the time limit.
    let allow: @Sendable (_ seconds: Int) -> Void
    /// The ways to whoever takes the answer, looked up when a wait begins.
    let answerPaths: @Sendable () -> [FileDescriptor]
    /// Waits one client address may hold at once; `nil`: not counted by address.
    let perAddress: Int?

    package init(allow: @escaping @Sendable (_ seconds: Int) -> Void,
                 answerPaths: @escaping @Sendable () -> [FileDescriptor], perAddress: Int?) {
        self.allow = allow
        self.answerPaths = answerPaths
        self.perAddress = perAddress
    }

    /// A CGI program's: the alarm moves out by the wait, so that the work
    /// after it keeps `CGIProgram.timeLimitSeconds`. The answer goes to
    /// stdout, a pipe fcgiwrap reads, and on over fcgiwrap's connection to
    /// nginx, which the program inherits: nginx closes it when the client
    /// goes away (`fastcgi_ignore_client_abort off`), and fcgiwrap itself
    /// would not tell the program until the answer was written. A FastCGI
    /// worker's answer goes over the request's own connection, which nginx
    /// closes just the same.
    package static func program(perAddress: Int?) -> WaitHost {
        WaitHost(allow: { CGIProgram.allowWait(seconds: $0) },
                 answerPaths: {
                     FastCGIProgram.answerPaths ?? [.standardOutput] + (Sys.inheritedConnection().map { [$0] } ?? [])
                 },
                 perAddress: perAddress)
    }

    /// In a test or a tool: no alarm to move, no reader to watch, no share.
    package static let none = WaitHost(allow: { _ in }, answerPaths: { [] }, perAddress: nil)

    /// The limit of a wait of `seconds`, starting now, in one of the box's
    /// places for waiting requests (`Capacity`), for a client at `address`
    /// (`REMOTE_ADDR`; `nil` or empty: none counted).
    func limit(seconds: Int, address: String?) -> WaitLimit {
        var share: WaitShare?
        if let perAddress, let address, !address.isEmpty { share = WaitShare(address: address, places: perAddress) }
        if let holder = WaitLoop.holder {
            // Held by the FastCGI mode's loop for waits, which counts the
            // places, and has no alarm to move.
            return WaitLimit(seconds: seconds, places: Capacity.loopWaits, share: share, holder: holder)
        }
        allow(seconds)
        return WaitLimit(seconds: seconds, places: Capacity.waitingAtOnce, answerPaths: answerPaths(), share: share)
    }
}
