import MockCloudSystem
import MockCloudWire

extension Timestamp {
    /// The current instant from the system clock.
    package static func now() -> Micros { Sys.realtimeMicros() }
}
