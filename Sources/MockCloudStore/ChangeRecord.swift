import MockCloudSystem
import MockCloudWire

/// One line of a key's change log: the change with sequence number `seq`.
package struct ChangeRecord: Sendable, Equatable {
    package var seq: Int64
    /// True for a deletion (the message became a tombstone).
    package var deleted: Bool
    /// Live messages in the inbox once this change is applied.
    package var live: Int
    package var id: MessageID

    package init(seq: Int64, deleted: Bool, live: Int, id: MessageID) {
        self.seq = seq
        self.deleted = deleted
        self.live = live
        self.id = id
    }
}
