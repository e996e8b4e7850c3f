import Foundation
import MockCloudClient
import MockCloudJSON
import MockCloudWire

/// How a scan message of the feed becomes HealthKit samples. `mirror` reads
/// the body the mirror box writes (docs/HEALTHKIT.md, "The scan message");
/// an app whose mirror writes another shape passes its own.
public struct ScanMapping: Sendable {
    /// The samples of one scan: `id` is the message's (the scan's) id,
    /// `version` its version, `body` its JSON, `heightCm` the user's height
    /// from the settings (nil: not known). Each sample carries the sync
    /// identifier `ScanMapping.syncIdentifier(scan:metric:)` and the sync
    /// version `version`. A body it cannot read gives no samples.
    public let samples: @Sendable (_ id: MessageID, _ version: Int64, _ body: JSONText, _ heightCm: Double?) -> [HealthSample]

    public init(samples: @escaping @Sendable (_ id: MessageID, _ version: Int64, _ body: JSONText, _ heightCm: Double?) -> [HealthSample]) {
        self.samples = samples
    }

    /// The metrics of one scan, the last part of its samples' sync
    /// identifiers, and their types.
    public static let metrics: [(metric: String, type: HealthType)] = [
        ("weight", .bodyMass), ("bodyFat", .bodyFatPercentage), ("waist", .waistCircumference),
        ("bmi", .bodyMassIndex), ("leanMass", .leanBodyMass),
    ]

    /// The types a scan's samples are of (all but height, which comes from the settings).
    public static let scanTypes: [HealthType] = metrics.map(\.type)

    /// `nm-<scanId>-<metric>`.
    public static func syncIdentifier(scan: MessageID, metric: String) -> String { "nm-\(scan.rawValue)-\(metric)" }

    /// The scan id of one of its samples' sync identifiers; nil when it is not one.
    public static func scan(ofSyncIdentifier identifier: String) -> MessageID? {
        guard identifier.hasPrefix("nm-") else { return nil }
        for (metric, _) in metrics where identifier.hasSuffix("-" + metric) {
            return MessageID(String(identifier.dropFirst(3).dropLast(metric.count + 1)))
        }
        return nil
    }

    /// The mirror's scan message: `measuredAt` (ISO 8601), `weightKg`,
    /// `bodyFatPercent` (0–100), `circumferencesCm.waist`, and optionally
    /// `heightCm` (over the settings' one). Body mass (kg), body fat (the
    /// percent ÷ 100), waist (m), BMI (weight ÷ height², with a height),
    /// lean mass (weight × (1 − fat ÷ 100)). A measurement that is absent,
    /// not a number, or out of range is left out; without `measuredAt` the
    /// scan gives nothing.
    public static let mirror = ScanMapping { id, version, body, settingsHeight in
        guard let object = body.value.objectValue, let date = object["measuredAt"]?.stringValue.flatMap(parseDate) else { return [] }
        func number(_ value: JSONValue?, in range: ClosedRange<Double>) -> Double? {
            guard case .number(let text)? = value, let number = Double(text), number.isFinite, range.contains(number) else { return nil }
            return number
        }
        let weight = number(object["weightKg"], in: 0.5...1_000)
        let fat = number(object["bodyFatPercent"], in: 0...100)
        let waistCm = number(object["circumferencesCm"]?.objectValue?["waist"], in: 1...1_000)
        let heightCm = number(object["heightCm"], in: 30...300) ?? settingsHeight.flatMap { (30...300).contains($0) ? $0 : nil }
        var values: [String: Double] = [:]
        values["weight"] = weight
        values["bodyFat"] = fat.map { $0 / 100 }
        values["waist"] = waistCm.map { $0 / 100 }
        if let weight, let heightCm { values["bmi"] = weight / ((heightCm / 100) * (heightCm / 100)) }
        if let weight, let fat { values["leanMass"] = weight * (1 - fat / 100) }
        return metrics.compactMap { metric, type in
            values[metric].map {
                HealthSample(type: type, value: $0, start: date, syncIdentifier: syncIdentifier(scan: id, metric: metric), syncVersion: version)
            }
        }
    }

    /// A time as the box reads `updatedAt` (docs/API.md §2: extended ISO
    /// 8601 such as `2026-05-18T04:43:04.134Z` or with an offset, or the
    /// basic `20260518T044304.134233Z`); nil otherwise.
    static func parseDate(_ text: String) -> Date? {
        Timestamp.parse(text).map(BoxClient.date)
    }
}
