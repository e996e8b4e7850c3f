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
        do {
            guard let bytes = try AtomicFile.read(name, in: directory) else { return nil }
            guard integrity.keys != nil else { return (bytes, .unsigned) }
            let sidecar = try AtomicFile.read(Sys.path(name, Self.sidecarSuffix), in: directory)
            return (bytes, integrity.verdict(for: bytes, sidecar: sidecar, at: place))
        } catch let error as SystemError {
            throw StorageError(error, .reading)
        }
    }

    /// The stored bytes, verified; `nil` when absent. A document that fails
    /// its check (or is unsigned when signatures are required) throws.
    ///
    /// A reader that holds no lock of the key passes the data directory as
    /// `unlockedIn`: it may read a document and then a sidecar that a writer
    /// replaced in between, so a failed check is read again under the key's
    /// shared lock, where no writer is at work, before it counts.
    package func read(_ name: String, at place: DocumentPlace, unlockedIn root: String? = nil) throws -> [UInt8]? {
        guard var (bytes, verdict) = try inspect(name, at: place) else { return nil }
        if case .invalid = verdict, let root {
            let again = { try inspect(name, at: place) }
            guard let settled = try KeyLock.withExistingLock(
                root: root, store: place.store, key: place.key, shared: true, again, ifMissing: again)
            else { return nil }
            (bytes, verdict) = settled
        }
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
    ///
    /// Once the document is in place the change is made: the last step only
    /// narrows its sidecar, and a failure there is not the write's failure
    /// (the pair still verifies; the next write of the document narrows it).
    package func write(_ bytes: [UInt8], to name: String, at place: DocumentPlace, replacing previous: [UInt8]?) throws {
        try StorageError.writing {
            var batch = AtomicBatch(directory: directory)
            let final = try stage(bytes, as: name, at: place, replacing: previous, into: &batch)
            try batch.commit(beforeVisibleChange: WriteProgress.beginVisibleChange)
            if let final { try? writeSidecar(final, of: name) }
        }
    }

    /// Replaces the MAC sidecar of `name` with `sidecar` (signed by
    /// `Integrity`), the document left as it is.
    package func writeSidecar(_ sidecar: [UInt8], of name: String) throws {
        try StorageError.writing { try AtomicFile.write(sidecar, to: Sys.path(name, Self.sidecarSuffix), in: directory) }
    }

    /// Replaces many documents as `write` replaces one, with one sync of the
    /// new files, one of the sidecars that keep the new MAC alone, and one
    /// directory fsync after each.
    package func write(_ documents: [DocumentWrite]) throws {
        try StorageError.writing { try writeAll(documents) }
    }

    private func writeAll(_ documents: [DocumentWrite]) throws {
        var batch = AtomicBatch(directory: directory)
        var finalSidecars: [[UInt8]] = []
        var finalNames: [String] = []
        for document in documents {
            guard let final = try stage(document.bytes, as: document.name, at: document.place,
                                        replacing: document.previous, visible: document.visible, into: &batch)
            else { continue }
            finalNames.append(Sys.path(document.name, Self.sidecarSuffix))
            finalSidecars.append(final)
        }
        try batch.commit(beforeVisibleChange: WriteProgress.beginVisibleChange)
        // The sidecars that accepted both states are in place: only now may
        // the final ones take their temporary names. Best effort, as in `write`.
        var finals = AtomicBatch(directory: directory)
        do {
            for (name, sidecar) in zip(finalNames, finalSidecars) { try finals.stage(sidecar, as: name, visible: false) }
            try finals.commit()
        } catch {
            finals.abandon()
        }
    }

    /// Stages a document (after its sidecar, signed; after removing a stale
    /// sidecar, unsigned) and returns the sidecar that keeps the new MAC
    /// alone, to be written once the batch is in place (`nil`: none needed).
    /// A document that is not `visible` changes nothing a reader sees when
    /// it is renamed into place (see `DocumentWrite.visible`).
    private func stage(
        _ bytes: [UInt8], as name: String, at place: DocumentPlace, replacing previous: [UInt8]?,
        visible: Bool = true, into batch: inout AtomicBatch
    ) throws -> [UInt8]? {
        let sidecarName = Sys.path(name, Self.sidecarSuffix)
        guard let sidecar = integrity.sidecar(for: bytes, at: place, alsoValid: previous.map { [$0] } ?? []) else {
            // Signing is off: nothing reads a sidecar, so removing it is no change.
            _ = try AtomicFile.remove(sidecarName, in: directory, durably: false)
            try batch.stage(bytes, as: name, visible: visible)
            return nil
        }
        // It accepts the old document and the new one alike: no reader sees it change.
        try batch.stage(sidecar, as: sidecarName, visible: false)
        try batch.stage(bytes, as: name, visible: visible)
        return previous == nil ? nil : integrity.sidecar(for: bytes, at: place)
    }

    /// Removes a document and then its sidecar; false when there was no
    /// document. Once the document is gone the change is made: a sidecar
    /// left behind names no document, and the next write replaces it.
    /// `durably`: the folder is synced after each (else the caller syncs it).
    package func remove(_ name: String, durably: Bool = true) throws -> Bool {
        WriteProgress.beginVisibleChange()
        return try StorageError.writing {
            let removed = try AtomicFile.remove(name, in: directory, durably: durably)
            _ = try? AtomicFile.remove(Sys.path(name, Self.sidecarSuffix), in: directory, durably: durably && removed)
            return removed
        }
    }
}

/// One document of `DocumentFolder.write(_:)`: its new bytes, where they
/// belong (for the MAC), and the bytes it replaces (`nil` when new).
package struct DocumentWrite {
    package var name: String
    package var bytes: [UInt8]
    package var place: DocumentPlace
    package var previous: [UInt8]?
    /// False for a file whose new bytes a reader cannot tell from the old
    /// ones until a later document of the batch is in place (member times
    /// that still hold the times of the settings they replace): a failure
    /// before that later rename then changed nothing.
    package var visible: Bool

    package init(name: String, bytes: [UInt8], place: DocumentPlace, previous: [UInt8]?, visible: Bool = true) {
        self.name = name
        self.bytes = bytes
        self.place = place
        self.previous = previous
        self.visible = visible
    }
}
