/// The request limits the server enforces and the client cuts its requests
/// to (docs/API.md §7 and §8). nginx's `client_max_body_size` per location,
/// its 413 texts and docs/openapi.yaml are checked against these by
/// `WireLimitsTests`.
package enum WireLimits {
    /// The largest `/user/settings` request body: 1 MiB.
    package static let settingsBodyBytes = 1 << 20
    /// The largest single inbox message body (`PUT`/`POST /inbox`), and of
    /// one item of a bulk: 256 KiB.
    package static let messageBodyBytes = 256 << 10
    /// The largest `POST /inbox:bulk` request body: 8 MiB.
    package static let bulkBodyBytes = 8 << 20
    /// The most items in one bulk request.
    package static let bulkItems = 1000
    /// The `limit` a feed page may ask for.
    package static let feedPageSizes = 1...1000
    /// The page size without `limit`.
    package static let feedPageDefault = 100
    /// The longest `X-User-Key` and `X-Device-Id`.
    package static let userKeyLength = 128
}

extension WireLimits {
    /// The `wait` a feed or settings read may ask for, in whole seconds
    /// (docs/API.md §3, §4): the longest a request is held for a change.
    package static let waitSeconds = 1...60
}
