/// How often and how long the client tries again what is safe to send again.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The wait before the second attempt; doubled each time, up to `maxDelay`.
    public var initialDelay: Duration
    /// The longest wait between attempts (a `Retry-After` may ask for more, up to `maxRetryAfter`).
    public var maxDelay: Duration
    /// The longest `Retry-After` honoured as given.
    public var maxRetryAfter: Duration

    /// 12 attempts over about 50 s: long enough for the box to restart nginx.
    public static let standard = RetryPolicy(
        maxAttempts: 12, initialDelay: .milliseconds(200), maxDelay: .seconds(6), maxRetryAfter: .seconds(60))

    public init(maxAttempts: Int, initialDelay: Duration, maxDelay: Duration, maxRetryAfter: Duration) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait after failed attempt `attempt` (1-based): the server's
    /// `Retry-After` seconds when it sent them, else exponential backoff with
    /// jitter (between half and all of the step), so that devices that failed
    /// together do not come back together.
    public func delay(afterAttempt attempt: Int, retryAfter: String?) -> Duration {
        if let seconds = Self.seconds(retryAfter) { return min(.seconds(seconds), maxRetryAfter) }
        return Backoff.delay(afterFailure: attempt, initial: initialDelay, cap: maxDelay)
    }

    /// A `Retry-After` of whole seconds; nil for none or another form.
    static func seconds(_ retryAfter: String?) -> Int? {
        guard let retryAfter, let seconds = Int(retryAfter.filter { $0 != " " }), seconds >= 0 else { return nil }
        return seconds
    }
}

/// The waits after failures in a row of one thing that keeps failing (the
/// engine's uploads, its settings edits and its follows, the watcher's
/// rounds, a follow's waiting requests): doubled from `initial` up to
/// `cap`, with jitter, and back to `initial` after a success. One type for
/// all of them, so that each backs off alike and on its own.
package struct Backoff: Sendable {
    package let initial: Duration
    package let cap: Duration
    /// Failures since the last success.
    package private(set) var failures = 0

    package init(initial: Duration, cap: Duration) {
        self.initial = initial
        self.cap = max(initial, cap)
    }

    /// Backing off as the policy's retries do: from `initialDelay` up to `maxDelay`.
    package init(_ policy: RetryPolicy) { self.init(initial: policy.initialDelay, cap: policy.maxDelay) }

    /// Backing off from what the box cannot take now and will not take
    /// soon (507, a 429 past its `Retry-After`, a settings document it
    /// cannot merge): a condition a person mends, so up to 10 minutes.
    package static func deferral(_ policy: RetryPolicy) -> Backoff { Backoff(initial: policy.initialDelay, cap: deferralCap) }

    /// The longest wait of a deferral.
    package static let deferralCap: Duration = .seconds(600)

    /// Counts a failure; the wait before the next attempt.
    package mutating func failed() -> Duration {
        failures += 1
        return Self.delay(afterFailure: failures, initial: initial, cap: cap)
    }

    /// A success: the next failure waits `initial` again.
    package mutating func succeeded() { failures = 0 }

    /// The wait after failure `failure` (1-based) in a row: `initial`
    /// doubled each time up to `cap`, times a random factor between half
    /// and one, so that devices that failed together do not come back together.
    static func delay(afterFailure failure: Int, initial: Duration, cap: Duration) -> Duration {
        let step = min(cap, initial * (1 << min(max(failure, 1) - 1, 20)))
        return step * Double.random(in: 0.5...1.0)
    }
}
