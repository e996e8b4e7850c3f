import MockCloudHTTP
import Testing

extension CGIResponse {
    /// The body as text, for exact comparisons.
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The serialized CGI answer as text.
    var wire: String { String(decoding: serialized, as: UTF8.self) }
}

/// Runs a route as the CGI edge does: an `HTTPResponseError` becomes its
/// answer; any other error is a test failure.
func answer(_ respond: () throws -> CGIResponse) -> CGIResponse {
    do {
        return try respond()
    } catch let error as any HTTPResponseError {
        return .error(error)
    } catch {
        Issue.record("not an HTTP error: \(error)")
        return CGIResponse(status: 0)
    }
}
