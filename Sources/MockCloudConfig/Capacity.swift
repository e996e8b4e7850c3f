/// How much the box is deployed to carry at once: the facts the launcher
/// (nginx/mockcloud-nginx.sh), the package's fcgiwrap unit
/// (packaging/debian/fcgiwrap-mockcloud.conf) and nginx's configuration
/// (nginx/mockcloud-locations.conf) are written to, and the programs'
/// share of them. `WaitingConfigurationTests` holds those files to these.
package enum Capacity {
    /// fcgiwrap's processes (`-c`): each runs one program, for one request,
    /// at a time.
    package static let fcgiwrapProcesses = 64
    /// nginx's cap on one client address's requests in progress
    /// (`limit_conn`): past it, 429 at once.
    package static let requestsPerAddress = 16
    /// Requests that may wait for a change (`?wait=`) at once on the whole
    /// box: each holds an fcgiwrap process for its wait, and the rest, one
    /// address's cap, always serve requests that do not wait.
    package static let waitingAtOnce = fcgiwrapProcesses - requestsPerAddress
    /// What a request refused for want of room tells the client to wait
    /// (`Retry-After`, seconds): long enough for a few waits to end.
    package static let retryAfterSeconds = 5
    /// FastCGI mode: the workers of each program's pool when
    /// `MOCKCLOUD_FASTCGI_WORKERS` is unset. Each serves one request at a
    /// time; on 2 cores, 4 keep both busy while others wait on an fsync.
    package static let fastCGIWorkers = 4
    /// FastCGI mode: the reads that may wait for a change at once in one
    /// program's event loop for waits (`MOCKCLOUD_FASTCGI_WAITS`), and one
    /// address's share of them (`MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS`). A
    /// held wait costs the loop a connection and a few hundred bytes; nginx
    /// holds two connections for it (the client's and the loop's).
    package static let loopWaits = 4096
    package static let loopWaitsPerAddress = 64
    /// What those two settings accept.
    package static let loopWaitsRange = 1...65536
}
