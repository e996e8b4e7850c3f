import MockCloudWire

/// Where a reader keeps its feed anchor between runs. Save it in the same
/// step as the data it covers, never before (README, "Keeping an anchor");
/// an app that keeps its data in a database keeps the anchor there, in the
/// same transaction (`ChangeApplier`).
public protocol AnchorStore: Sendable {
    func load() throws -> Anchor?
    /// Saves `anchor`; nil forgets it (the next read is a full one).
    func save(_ anchor: Anchor?) throws
}

/// An anchor in a file of its own, replaced atomically (temporary file,
/// fsync, rename, folder fsync): a crash leaves the old or the new one.
public struct FileAnchorStore: AnchorStore {
    public let directory: String
    public let name: String

    public init(directory: String, name: String = ".mockcloud-anchor") {
        self.directory = directory
        self.name = name
    }

    private var path: String { directory + "/" + name }

    public func load() throws -> Anchor? {
        guard let bytes = try Platform.read(path) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).filter { $0 != "\n" }
        guard let anchor = Anchor(text) else { throw ClientError.local("\(path) holds no anchor") }
        return anchor
    }

    public func save(_ anchor: Anchor?) throws {
        if let anchor {
            try Platform.replace(path, with: Array((anchor.rawValue + "\n").utf8))
        } else {
            _ = try Platform.remove(path)
        }
    }
}
