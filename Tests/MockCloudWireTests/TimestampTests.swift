import MockCloudSystem
import MockCloudWire
import Testing

/// Client time stamps in the accepted forms become instants (microseconds
/// since the epoch, UTC); the server's own stamps print as Python prints them.
@Suite struct TimestampTests {
    /// 2026-05-18T04:43:04.095Z; values checked with Python's `datetime`.
    static let instant: Timestamp.Micros = 1_779_079_384_095_000

    @Test(arguments: [
        ("20260518T044304.095Z", instant),
        ("20260518T044304.095000Z", instant),
        ("20260518T044304.095000000Z", instant),
        ("20260518T064304.095+0200", instant),
        ("20260518T064304.095+02", instant),
        ("20260517T234304.095-0500", instant),
        ("2026-05-18T04:43:04.095Z", instant),
        ("2026-05-18T06:43:04.095+02:00", instant),
        ("2026-05-17T23:43:04.095-05:00", instant),
        ("2026-05-18T04:43:04.095+00:00", instant),
        ("2026-05-18T04:43:04.095-00:00", instant),
        ("2026-05-18t04:43:04.095z", instant),
        ("2026-05-18T04:43:04,095Z", instant),
        ("20260518T044304.134233Z", 1_779_079_384_134_233),
        ("20260518T044304Z", 1_779_079_384_000_000),
        ("20260518T044304.1Z", 1_779_079_384_100_000),
        ("2026-05-18T10:13:04+05:30", 1_779_079_384_000_000),
        ("2024-02-29T23:59:59.999999Z", 1_709_251_199_999_999),
        ("2000-02-29T00:00:00Z", 951_782_400_000_000),
        ("2000-01-01T00:00:00Z", 946_684_800_000_000),
        ("1970-01-01T00:00:00Z", 0),
        ("19691231T235959.999999Z", -1),
        ("0001-01-01T00:00:00Z", -62_135_596_800_000_000),
        ("9999-12-31T23:59:59.999999Z", 253_402_300_799_999_999),
    ] as [(String, Timestamp.Micros)])
    func acceptedFormsParseToTheirInstant(_ text: String, _ micros: Timestamp.Micros) {
        #expect(Timestamp.parse(text) == micros)
    }

    @Test(arguments: [
        ("20260518T044304.123456789Z", 1_779_079_384_123_456),
        ("2026-05-18T04:43:04.0950009Z", 1_779_079_384_095_000),
        ("2026-05-18T04:43:04.0949999Z", 1_779_079_384_094_999),
    ] as [(String, Timestamp.Micros)])
    func fractionDigitsPastTheSixthAreTruncated(_ text: String, _ micros: Timestamp.Micros) {
        #expect(Timestamp.parse(text) == micros)
    }

    @Test(arguments: [
        "", "yesterday", "2026-05-18", "20260518", "2026-05-18T04:43:04", "20260518T044304",
        "2026-05-18T04:43Z", "2026-05-18 04:43:04Z", "2026-05-18T04:43:04.Z",
        "20260518T044304.1234567890Z", "2026-05-18T04:43:04.1234567890Z",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-05-00T00:00:00Z", "2026-05-18T24:00:00Z", "2026-05-18T23:60:00Z",
        "2026-05-18T23:59:60Z", "2026-05-18T04:43:04+24:00", "2026-05-18T04:43:04+02:60",
        "2026-05-18T04:43:04+0200", "20260518T044304+02:00", "2026-05-18T04:43:04+2", "20260518T044304+020",
        "2026-0518T04:43:04Z", "20260518T04:43:04Z", "2026-05-18T04:43:04ZZ", "2026-05-18T04:43:04Z ",
        " 2026-05-18T04:43:04Z", "+2026-05-18T04:43:04Z", "２０２６-05-18T04:43:04Z",
        "2026-05-18T04:43:04.095Zjunk", "1779079384",
    ])
    func everythingElseIsNotATimestamp(_ text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test(arguments: [
        (0, "19700101T000000.000000Z"),
        (1_779_079_384_134_233, "20260518T044304.134233Z"),
        (1_779_079_384_000_001, "20260518T044304.000001Z"),
        (-1, "19691231T235959.999999Z"),
        (1_709_251_199_999_999, "20240229T235959.999999Z"),
        (946_684_800_000_000, "20000101T000000.000000Z"),
        (253_402_300_799_999_999, "99991231T235959.999999Z"),
    ] as [(Timestamp.Micros, String)])
    func formatWritesPythonsStrftimeLayoutInUTC(_ micros: Timestamp.Micros, _ text: String) {
        #expect(Timestamp.format(micros) == text)
        #expect(Timestamp.parse(text) == micros)
    }

    @Test func nowIsTheSystemClock() {
        let before = Sys.realtimeMicros()
        let stamp = Timestamp.format(Sys.realtimeMicros())
        let after = Sys.realtimeMicros()
        let parsed = Timestamp.parse(stamp)
        #expect(parsed.map { $0 >= before && $0 <= after } == true)
        // After 2026-01-01 (when this code was written) and before 2100: microseconds, not seconds.
        #expect(before > 1_767_225_600_000_000 && before < 4_102_444_800_000_000)
    }
}
