import Foundation
import MockCloudClient
import MockCloudHealth
import MockCloudTestSupport
import MockCloudWire
import Testing

/// A scan message, as docs/HEALTHKIT.md documents it, becomes HealthKit samples.
@Suite struct ScanMappingTests {
    /// The first JSON block of the guide's "The scan message" section.
    static func documentedScan() throws -> JSONText {
        let guide = try repositoryFile("docs/HEALTHKIT.md")
        let section = try #require(guide.range(of: "## The scan message"), "docs/HEALTHKIT.md has no scan message section")
        let block = try #require(guide.range(of: "```json\n", range: section.upperBound..<guide.endIndex))
        let end = try #require(guide.range(of: "```", range: block.upperBound..<guide.endIndex))
        return try JSONText(validating: String(guide[block.upperBound..<end.lowerBound]))
    }

    static let scan = MessageID("20260518T044304Z")!

    func byMetric(_ samples: [HealthSample]) -> [String: HealthSample] {
        Dictionary(uniqueKeysWithValues: samples.map { (String($0.syncIdentifier!.split(separator: "-").last!), $0) })
    }

    @Test func theDocumentedScanGivesFiveSamplesInHealthKitsUnits() throws {
        let samples = ScanMapping.mirror.samples(Self.scan, 3, try Self.documentedScan(), 178)
        let metric = byMetric(samples)
        #expect(metric.keys.sorted() == ["bmi", "bodyFat", "leanMass", "waist", "weight"])
        let expected: [(String, HealthType, Double)] = [
            ("weight", .bodyMass, 72.4),  // kg
            ("bodyFat", .bodyFatPercentage, 0.185),  // 18.5 % as HealthKit's 0–1 fraction
            ("waist", .waistCircumference, 0.812),  // 81.2 cm in meters
            ("bmi", .bodyMassIndex, 72.4 / (1.78 * 1.78)),  // count: weight ÷ height², height from the settings
            ("leanMass", .leanBodyMass, 72.4 * (1 - 0.185)),  // weight × (1 − fat ÷ 100)
        ]
        for (name, type, value) in expected {
            let sample = try #require(metric[name])
            #expect(sample.type == type, "\(name)")
            #expect(abs(sample.value - value) < 1e-9, "\(name): \(sample.value) ≠ \(value)")
            #expect(sample.syncIdentifier == "nm-20260518T044304Z-\(name)")
            #expect(sample.syncVersion == 3, "the message's version is the sync version")
            #expect(sample.start == Date(timeIntervalSince1970: 1_779_079_384.134), "measuredAt 2026-05-18T04:43:04.134Z")
        }
        #expect(HealthType.bodyMass.unit == "kg" && HealthType.bodyFatPercentage.unit == "%" && HealthType.waistCircumference.unit == "m"
            && HealthType.bodyMassIndex.unit == "count" && HealthType.height.unit == "m")
    }

    @Test func onlyTheSixTypesThatExistNoHipsChestThighCalfOrArm() throws {
        let samples = ScanMapping.mirror.samples(Self.scan, 1, try Self.documentedScan(), 178)
        #expect(Set(samples.map(\.type)).isSubset(of: Set(HealthType.all)))
        #expect(HealthType.all.count == 6)
        #expect(!samples.contains { ["hips", "chest", "thigh", "calf", "arm"].contains(String($0.syncIdentifier!.split(separator: "-").last!)) })
    }

    @Test func withoutAHeightThereIsNoBMIAndTheScansOwnHeightWins() throws {
        let body = try Self.documentedScan()
        #expect(byMetric(ScanMapping.mirror.samples(Self.scan, 1, body, nil))["bmi"] == nil)
        let own = try JSONText(validating: #"{"measuredAt": "2026-05-18T04:43:04Z", "weightKg": 80, "heightCm": 200}"#)
        let bmi = try #require(byMetric(ScanMapping.mirror.samples(Self.scan, 1, own, 150))["bmi"])
        #expect(abs(bmi.value - 20) < 1e-9)
    }

    @Test(arguments: [
        #"{"weightKg": 72.4}"#,  // no measuredAt: nothing
        #"{"measuredAt": "yesterday", "weightKg": 72.4}"#,
    ])
    func aScanWithoutAReadableTimeGivesNothing(_ body: String) throws {
        #expect(ScanMapping.mirror.samples(Self.scan, 1, try JSONText(validating: body), 178).isEmpty)
    }

    @Test func measurementsOutOfRangeOrNotNumbersAreLeftOut() throws {
        let body = try JSONText(validating:
            #"{"measuredAt": "20260518T044304Z", "weightKg": "72", "bodyFatPercent": 140, "circumferencesCm": {"waist": 80}}"#)
        let samples = byMetric(ScanMapping.mirror.samples(Self.scan, 1, body, 178))
        #expect(samples.keys.sorted() == ["waist"])
    }

    @Test func aSyncIdentifierNamesItsScanEvenWhenTheScanIdHasDashes() {
        #expect(ScanMapping.scan(ofSyncIdentifier: "nm-2026-05-18-a-leanMass") == MessageID("2026-05-18-a"))
        #expect(ScanMapping.scan(ofSyncIdentifier: "nm-height-1779079384134000") == nil)
        #expect(ScanMapping.scan(ofSyncIdentifier: "hk-1234-weight") == nil)
    }
}
