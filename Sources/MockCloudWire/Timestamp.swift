import MockCloudJSON

/// Time stamps: the server's own (`20260518T044304.134233Z`, as the Python
/// mock cloud writes them) and the clients' `updatedAt`, compared as instants.
package enum Timestamp {
    /// Microseconds since the Unix epoch, UTC.
    package typealias Micros = Int64

    /// Formats an instant as `YYYYMMDDTHHMMSS.ffffffZ` (Python's
    /// `strftime("%Y%m%dT%H%M%S.%fZ")` in UTC).
    package static func format(_ micros: Micros) -> String {
        let seconds = floorDivide(micros, 1_000_000)
        let fraction = Int(micros - seconds * 1_000_000)
        let days = floorDivide(seconds, 86400)
        let secondOfDay = Int(seconds - days * 86400)
        let (year, month, day) = civilDate(fromDays: Int(days))
        var out = ""
        out.reserveCapacity(23)
        out += pad(year, 4) + pad(month, 2) + pad(day, 2) + "T"
        out += pad(secondOfDay / 3600, 2) + pad(secondOfDay / 60 % 60, 2) + pad(secondOfDay % 60, 2)
        out += "." + pad(fraction, 6) + "Z"
        return out
    }

    /// 0001-01-01T00:00:00Z through 9999-12-31T23:59:59.999999Z.
    package static let supported: ClosedRange<Micros> =
        Micros(days(year: 1, month: 1, day: 1)) * 86_400_000_000...(Micros(days(year: 10000, month: 1, day: 1)) * 86_400_000_000 - 1)

    /// Parses a client time stamp into microseconds since the epoch; `nil` when
    /// it is not one of the accepted forms:
    /// - basic: `20260518T044304Z`, `20260518T044304.095000Z` (0–9 fraction
    ///   digits), with `Z`, `+HHMM` or `+HH`;
    /// - extended ISO 8601: `2026-05-18T04:43:04.095Z`, with `Z`, `+HH:MM`.
    /// Fraction digits past the sixth are truncated (microsecond resolution).
    package static func parse(_ text: String) -> Micros? {
        var scanner = Scanner(Array(text.utf8))
        return scanner.parseInstant()
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        ASCII.zeroPadded(Int64(value), width: width)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    /// The date of a day number since 1970-01-01.
    static func civilDate(fromDays z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<count {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }

        mutating func take(_ ascii: Unicode.Scalar) -> Bool {
            guard current == UInt8(ascii: ascii) else { return false }
            index += 1
            return true
        }

        mutating func takeSeparator(_ ascii: Unicode.Scalar, extended: Bool) -> Bool {
            extended ? take(ascii) : true
        }

        mutating func parseInstant() -> Micros? {
            guard let year = digits(4) else { return nil }
            let extended = take("-")
            guard let month = digits(2), takeSeparator("-", extended: extended), let day = digits(2) else { return nil }
            guard take("T") || take("t") else { return nil }
            guard let hour = digits(2), takeSeparator(":", extended: extended),
                let minute = digits(2), takeSeparator(":", extended: extended),
                let second = digits(2)
            else { return nil }
            var micros = 0
            if take(".") || take(",") {
                var count = 0
                while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    if count < 6 { micros = micros * 10 + Int(byte - UInt8(ascii: "0")) }
                    count += 1
                    index += 1
                }
                // Basic form: 0-9 digits after the dot; extended: at least one.
                guard count <= 9, extended ? count >= 1 : true else { return nil }
                for _ in min(count, 6)..<6 { micros *= 10 }
            }
            guard (1...12).contains(month), day >= 1, day <= Timestamp.daysInMonth(year: year, month: month),
                hour <= 23, minute <= 59, second <= 59
            else { return nil }
            guard let offsetSeconds = parseOffset(extended: extended), index == bytes.count else { return nil }
            let daysSinceEpoch = Timestamp.days(year: year, month: month, day: day)
            let seconds = Int64(daysSinceEpoch) * 86400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
            let instant = seconds * 1_000_000 + Int64(micros)
            // Years 1-9999 in UTC, as Python's datetime: an offset must not
            // carry the instant out of them (0000-01-01T00:00:00+01:00).
            guard Timestamp.supported.contains(instant) else { return nil }
            return instant
        }

        /// `Z`, or `+HH:MM` (extended) / `+HHMM` or `+HH` (basic); seconds east of UTC.
        mutating func parseOffset(extended: Bool) -> Int? {
            if take("Z") || take("z") { return 0 }
            let sign: Int
            if take("+") { sign = 1 } else if take("-") { sign = -1 } else { return nil }
            guard let hours = digits(2), hours <= 23 else { return nil }
            var minutes = 0
            if extended {
                guard take(":"), let m = digits(2) else { return nil }
                minutes = m
            } else if index < bytes.count {
                guard let m = digits(2) else { return nil }
                minutes = m
            }
            guard minutes <= 59 else { return nil }
            return sign * (hours * 3600 + minutes * 60)
        }
    }
}
