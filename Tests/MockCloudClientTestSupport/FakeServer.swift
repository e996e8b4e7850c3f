import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// A transport that answers from a script instead of a network: each test
/// says what the server does with each request and reads what was sent.
package actor FakeServer: HTTPTransport {
    package typealias Answer = @Sendable (TransportRequest, Int) -> Result<TransportResponse, TransportError>
    private let answer: Answer
    package private(set) var requests: [TransportRequest] = []

    package init(_ answer: @escaping Answer) { self.answer = answer }

    package func send(_ request: TransportRequest) async throws -> TransportResponse {
        requests.append(request)
        return try answer(request, requests.count).get()
    }

    package static func json(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> Result<TransportResponse, TransportError> {
        .success(TransportResponse(status: status, headers: headers, body: Array(text.utf8)))
    }

    /// The items of a bulk request body.
    package static func items(_ request: TransportRequest) -> [JSONObject] {
        guard case .array(let items)? = (try? JSONParser.parse(request.body))?.objectValue?["messages"] else { return [] }
        return items.compactMap(\.objectValue)
    }

    /// A 200 bulk answer storing every item (201) at seq 1, 2, ….
    package static func storeAll(_ request: TransportRequest) -> Result<TransportResponse, TransportError> {
        let rows = items(request).enumerated().map { index, item in
            #"{"id": "\#(item["id"]?.stringValue ?? "")", "status": 201, "seq": \#(index + 1)}"#
        }
        return json(200, #"{"results": [\#(rows.joined(separator: ", "))]}"#)
    }
}

/// Records the client's waits instead of sleeping.
package final class Waits: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Double] = []
    package init() {}
    /// Each wait, in seconds.
    package var seconds: [Double] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }
    package func record(_ wait: Duration) {
        lock.lock()
        defer { lock.unlock() }
        recorded.append(Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
    }
}

/// The client's clock in tests: each wait recorded in `waits`, then
/// `actually` slept instead (none: it returns at once, unless cancelled).
package struct RecordingClock: Clock {
    package struct Instant: InstantProtocol {
        package var offset: Duration
        package func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }
    package let waits: Waits
    package var actually: Duration = .zero

    package var now: Instant { Instant(offset: .zero) }
    package var minimumResolution: Duration { .zero }

    package func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        waits.record(deadline.offset)
        if actually > .zero { try await Task.sleep(for: actually) }
        try Task.checkCancellation()
    }
}

extension ClientConfiguration {
    /// This configuration with its waits recorded in `waits` (and `actually` slept instead).
    package func recording(_ waits: Waits, actually: Duration = .zero) -> ClientConfiguration {
        var configuration = self
        configuration.clock = RecordingClock(waits: waits, actually: actually)
        return configuration
    }
}

package func client(_ server: FakeServer, device: String? = "phone-1", waits: Waits = Waits(), attempts: Int = 5) -> BoxClient {
    BoxClient(
        configuration: ClientConfiguration(
            userKey: UserKey("u1")!, deviceID: device.flatMap(DeviceID.init),
            retry: RetryPolicy(maxAttempts: attempts, initialDelay: .milliseconds(100), maxDelay: .seconds(1), maxRetryAfter: .seconds(60))
        ).recording(waits),
        transport: server)
}

package func body(_ text: String) -> JSONText { try! JSONText(validating: text) }
package func id(_ text: String) -> MessageID { MessageID(text)! }

package func envelope(_ id: String, version: Int, seq: Int) -> String {
    #"{"id": "\#(id)", "version": \#(version), "seq": \#(seq), "source": null, "serverReceivedAt": "20260101T000000.000000Z", "body": {"v": \#(version)}}"#
}

package func page(_ messages: [String], deleted: [(String, Int)] = [], anchor: String, hasMore: Bool) -> String {
    let gone = deleted.map { #"{"id": "\#($0.0)", "seq": \#($0.1)}"# }
    return #"{"messages": [\#(messages.joined(separator: ", "))], "deleted": [\#(gone.joined(separator: ", "))], "anchor": "\#(anchor)", "hasMore": \#(hasMore)}"#
}
