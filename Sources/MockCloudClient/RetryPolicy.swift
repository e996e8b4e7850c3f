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
        if let retryAfter, let seconds = Int(retryAfter.filter { $0 != " " }), seconds >= 0 {
            return min(.seconds(seconds), maxRetryAfter)
        }
        let step = min(maxDelay, initialDelay * (1 << min(attempt - 1, 20)))
        return step * Double.random(in: 0.5...1.0)
    }
}
