/// One of the HealthKit body types this library reads and writes, named by
/// its `HKQuantityTypeIdentifier` raw value, with the unit its values are in
/// everywhere in this library (the sample's value, the upload's body).
///
/// HealthKit has six body types a scan maps onto, and only those: there is
/// no hip, chest, thigh, calf or arm type. A struct with static members, not
/// an enum, so that the list may grow without breaking a `switch`.
public struct HealthType: Sendable, Hashable, CustomStringConvertible {
    /// `HKQuantityTypeIdentifier`'s raw value.
    public let identifier: String
    /// The HealthKit unit string of its values (`HKUnit(from:)`).
    public let unit: String
    /// The short name the upload's body and the sync identifiers use.
    public let name: String

    /// Body mass, in kilograms.
    public static let bodyMass = HealthType("HKQuantityTypeIdentifierBodyMass", unit: "kg", name: "bodyMass")
    /// Body fat as a fraction from 0 to 1 (HealthKit's percent unit; the
    /// mirror reports 0–100).
    public static let bodyFatPercentage = HealthType("HKQuantityTypeIdentifierBodyFatPercentage", unit: "%", name: "bodyFatPercentage")
    /// Waist circumference, in meters.
    public static let waistCircumference = HealthType("HKQuantityTypeIdentifierWaistCircumference", unit: "m", name: "waistCircumference")
    /// Body mass index, in HealthKit's count unit.
    public static let bodyMassIndex = HealthType("HKQuantityTypeIdentifierBodyMassIndex", unit: "count", name: "bodyMassIndex")
    /// Lean body mass, in kilograms.
    public static let leanBodyMass = HealthType("HKQuantityTypeIdentifierLeanBodyMass", unit: "kg", name: "leanBodyMass")
    /// Height, in meters.
    public static let height = HealthType("HKQuantityTypeIdentifierHeight", unit: "m", name: "height")

    /// The six, in this order.
    public static let all: [HealthType] = [.bodyMass, .bodyFatPercentage, .waistCircumference, .bodyMassIndex, .leanBodyMass, .height]

    init(_ identifier: String, unit: String, name: String) {
        self.identifier = identifier
        self.unit = unit
        self.name = name
    }

    public var description: String { name }
}
