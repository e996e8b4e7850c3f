/// Small text codecs shared by the parsers: digits, hex and base64.
package enum ASCII {
    /// True for `0`...`9`.
    @inline(__always)
    package static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// The value of a hex digit in either case.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The lowercase hex digit of a value 0...15.
    @inline(__always)
    package static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// The text of `bytes` when they are valid UTF-8, else `nil`. Decoding
    /// repairs each invalid sequence to U+FFFD, which changes the bytes, so
    /// the text is valid exactly when it encodes back to them. (The standard
    /// library's generic `String(validating:as:)` demangles a type name on its
    /// first call, which a process that lives for one request pays in full.)
    package static func validUTF8(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// Lowercase hex of `bytes`.
    package static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = hexDigit(byte >> 4)
                out[2 * i + 1] = hexDigit(byte & 0xF)
            }
            return bytes.count * 2
        }
    }

    /// Appends the lowest `digits` hex digits of `value`, zero-padded.
    package static func appendHex(_ value: UInt64, digits: Int, to out: inout [UInt8]) {
        for shift in stride(from: 4 * (digits - 1), through: 0, by: -4) {
            out.append(hexDigit(UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF))
        }
    }

    /// Appends the decimal digits of `value`, with a minus sign when negative.
    package static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    /// The bytes of an even-length hex text; `nil` when it is not one.
    /// Not generic: callers in other modules would get the unspecialised
    /// form, whose first call looks up `Collection.Element` at run time
    /// (more than the rest of a signed GET /user/settings).
    package static func decodeHex(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var high: UInt8?
        for byte in text {
            guard let value = hexValue(byte) else { return nil }
            if let h = high {
                out.append(h << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return out
    }

    /// Decimal digits of `value`, left-padded with zeros to `width`.
    package static func zeroPadded(_ value: Int64, width: Int) -> String {
        var out: [UInt8] = []
        appendZeroPadded(value, width: width, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `zeroPadded(value, width:)`.
    package static func appendZeroPadded(_ value: Int64, width: Int, to out: inout [UInt8]) {
        let start = out.count
        appendDecimal(Int(value), to: &out)
        let missing = width - (out.count - start)
        if missing > 0 { out.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: missing), at: start) }
    }

    /// Standard base64 (RFC 4648, `+/`, `=` padding optional); `nil` when invalid.
    package static func decodeBase64(_ text: [UInt8]) -> [UInt8]? {
        var body = text[...]
        while body.last == UInt8(ascii: "=") { body.removeLast() }
        guard text.count - body.count <= 2, body.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in body {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return out
    }
}
