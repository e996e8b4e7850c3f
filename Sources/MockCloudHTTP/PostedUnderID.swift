import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudWire

/// A `POST /inbox` whose storage failed after the message may have been
/// stored under its server-chosen id: the answer names the id (member `id`
/// and `Location`), so that the client checks `GET /inbox/<id>` or retries
/// with `PUT /inbox/<id>` instead of posting a second copy.
package struct PostedUnderID: HTTPResponseError {
    package let cause: StorageError
    package let id: MessageID

    package var status: HTTPStatus { cause.status }
    package var dataChange: DataChange? { cause.dataChange }
    package var logDetail: String? { cause.logDetail }

    package var message: String {
        "storage failed after the message was stored as \(location), or while it was being stored:"
            + " it may not survive a power loss. Check GET \(location), or retry with PUT \(location)"
            + " (safe); posting again would store a second copy"
    }

    package var extraMembers: [JSONMember] { [JSONMember("id", .string(id.rawValue))] }
    package var extraHeaders: [(String, String)] { [(HTTPHeader.location.name, location)] }

    private var location: String { Endpoint.message(id) }
}
