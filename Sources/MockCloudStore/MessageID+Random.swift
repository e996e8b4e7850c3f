import MockCloudJSON
import MockCloudSystem
import MockCloudWire

extension MessageID {
    /// A random (version 4) UUID in lowercase: the id `POST /inbox` gives a message.
    package static func random() -> MessageID {
        var b = Random.bytes(16)
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        let text = [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { ASCII.hex(Array(b[$0])) }.joined(separator: "-")
        return MessageID(text)!
    }
}
