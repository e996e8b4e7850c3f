import Foundation
import MockCloudClient

/// `HealthImport`'s anchors, one file per type in the `health` folder of
/// the engine's state directory (not UserDefaults: with the queue they
/// describe, and replaced atomically, so a crash leaves the old anchor or
/// the new one). The bytes are HealthKit's archived `HKQueryAnchor`.
struct ImportAnchors: Sendable {
    let directory: String

    init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("health").path
    }

    func path(_ type: HealthType) -> String { directory + "/" + type.name + ".anchor" }

    /// The type's anchor; nil before its first import.
    func load(_ type: HealthType) throws -> [UInt8]? {
        try DurableFile.read(path(type))
    }

    /// Replaces the type's anchor, durably.
    func save(_ anchor: [UInt8], for type: HealthType) throws {
        if !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            } catch CocoaError.fileWriteFileExists {
            } catch {
                throw ClientError.local("cannot create \(directory): \(error.localizedDescription)")
            }
        }
        try DurableFile.replace(path(type), with: anchor)
    }
}
