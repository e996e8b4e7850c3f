import MockCloudSystem

/// A folder of documents, each replaced atomically and, when signing is on,
/// paired with a MAC sidecar `<name>.mac` that is checked on every read.
package struct DocumentFolder: Sendable {
    package let directory: String
    package let integrity: Integrity

    /// The suffix of a MAC sidecar.
    package static let sidecarSuffix = ".mac"

    package init(directory: String, integrity: Integrity) {
        self.directory = directory
        self.integrity = integrity
    }

    /// The stored bytes and what their sidecar says of them; `nil` when the
    /// document is absent. Signing off: `.unsigned`, no sidecar is read.
    package func inspect(_ name: String, at place: DocumentPlace) throws -> (bytes: [UInt8], verdict: Integrity.Verdict)? {
        guard let bytes = try AtomicFile.read(name, in: directory) else { return nil }
        guard integrity.keys != nil else { return (bytes, .unsigned) }
        let sidecar = try AtomicFile.read(Sys.path(name, Self.sidecarSuffix), in: directory)
        return (bytes, integrity.verdict(for: bytes, sidecar: sidecar, at: place))
    }

    /// The stored bytes, verified; `nil` when absent. A document that fails
    /// its check (or is unsigned when signatures are required) throws.
    package func read(_ name: String, at place: DocumentPlace) throws -> [UInt8]? {
        guard let (bytes, verdict) = try inspect(name, at: place) else { return nil }
        switch verdict {
        case .signed: return bytes
        case .unsigned where !integrity.requireSigned: return bytes
        case .unsigned:
            throw IntegrityError(file: directory + "/" + name, reason: "unsigned, and MOCKCLOUD_HMAC_REQUIRE=1")
        case .invalid(let reason):
            throw IntegrityError(file: directory + "/" + name, reason: reason)
        }
    }

    /// Replaces `name` with `bytes`. Signed: the sidecar first accepts both the
    /// `previous` bytes and the new ones, then the document is renamed into
    /// place, then the sidecar keeps the new MAC alone; a crash at any point
    /// leaves a pair that verifies. Unsigned: a stale sidecar is removed first.
    package func write(_ bytes: [UInt8], to name: String, at place: DocumentPlace, replacing previous: [UInt8]?) throws {
        let sidecarName = Sys.path(name, Self.sidecarSuffix)
        guard let sidecar = integrity.sidecar(for: bytes, at: place, alsoValid: previous.map { [$0] } ?? []) else {
            _ = try AtomicFile.remove(sidecarName, in: directory, durably: false)
            try AtomicFile.write(bytes, to: name, in: directory)
            return
        }
        try AtomicFile.write(sidecar, to: sidecarName, in: directory)
        try AtomicFile.write(bytes, to: name, in: directory)
        if previous != nil, let final = integrity.sidecar(for: bytes, at: place) {
            try AtomicFile.write(final, to: sidecarName, in: directory)
        }
    }

    /// Removes a document and then its sidecar; false when there was no document.
    package func remove(_ name: String) throws -> Bool {
        let removed = try AtomicFile.remove(name, in: directory)
        _ = try AtomicFile.remove(Sys.path(name, Self.sidecarSuffix), in: directory, durably: removed)
        return removed
    }
}
