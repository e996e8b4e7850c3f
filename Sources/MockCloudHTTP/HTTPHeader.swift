/// The header names the service reads and writes, spelled once.
package enum HTTPHeader {
    // Read from requests.
    package static let userKey = "X-User-Key"
    package static let deviceID = "X-Device-Id"
    package static let syncVersion = "X-Sync-Version"
    package static let authorization = "Authorization"
    package static let ifMatch = "If-Match"
    package static let ifNoneMatch = "If-None-Match"
    package static let contentEncoding = "Content-Encoding"
    // Written in answers.
    package static let contentType = "Content-Type"
    package static let contentLength = "Content-Length"
    package static let etag = "ETag"
    package static let location = "Location"
    package static let allow = "Allow"
    package static let wwwAuthenticate = "WWW-Authenticate"
}
