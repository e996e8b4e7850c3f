/// Allow-list checks for everything a client names that becomes part of a path.
package enum Identifier {
    /// `^[A-Za-z0-9_-]{1,128}$`: the `X-User-Key` and `X-Device-Id` shape.
    package static func isValidUserKey(_ text: String) -> Bool {
        matches(text, maxLength: WireLimits.userKeyLength, extra: "_-")
    }

    /// True when `text` is 1...`maxLength` bytes of ASCII letters, digits and `extra`.
    package static func matches(_ text: String, maxLength: Int, extra: StaticString) -> Bool {
        let extra = UnsafeBufferPointer(start: extra.utf8Start, count: extra.utf8CodeUnitCount)
        var count = 0
        for byte in text.utf8 {
            count += 1
            if count > maxLength { return false }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            default:
                if !extra.contains(byte) { return false }
            }
        }
        return count > 0
    }
}
