import MockCloudSystem

/// Where a reader keeps its feed anchor between runs. Save it in the same
/// step as the data it covers, never before (README, "Keeping an anchor").
public protocol AnchorStore: Sendable {
    func load() throws(ClientError) -> Anchor?
    /// Saves `anchor`; nil forgets it (the next read is a full one).
    func save(_ anchor: Anchor?) throws(ClientError)
}

/// An anchor in a file of its own, replaced atomically (temporary file,
/// fsync, rename, directory fsync): a crash leaves the old or the new one.
public struct FileAnchorStore: AnchorStore {
    public let directory: String
    public let name: String

    public init(directory: String, name: String = ".mockcloud-anchor") {
        self.directory = directory
        self.name = name
    }

    public func load() throws(ClientError) -> Anchor? {
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(name, in: directory)
        } catch {
            throw .local("cannot read the anchor \(directory)/\(name): \(ClientError.describe(error))")
        }
        guard let bytes else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).filter { $0 != "\n" }
        guard let anchor = Anchor(text) else { throw .local("\(directory)/\(name) holds no anchor") }
        return anchor
    }

    public func save(_ anchor: Anchor?) throws(ClientError) {
        do {
            if let anchor {
                try AtomicFile.write(Array((anchor.rawValue + "\n").utf8), to: name, in: directory)
            } else {
                _ = try AtomicFile.remove(name, in: directory)
            }
        } catch {
            throw .local("cannot save the anchor \(directory)/\(name): \(ClientError.describe(error))")
        }
    }
}
