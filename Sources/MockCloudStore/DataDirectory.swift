import MockCloudSystem
import MockCloudWire

/// The stored documents of a data directory, as the admin tool walks them.
package enum DataDirectory {
    /// The documents under `root`, in a stable order, with the member times
    /// beside settings (signed like them); temporary files and sidecars are
    /// skipped.
    package static func documents(root: String, integrity: Integrity) throws -> [StoredDocument] {
        var found: [StoredDocument] = []
        let settings = SettingsStore(root: root, integrity: integrity)
        let times = ".json" + SettingsStore.timesSuffix
        for name in try entries(settings.directory) {
            if name.hasSuffix(".json"), let key = UserKey(String(name.dropLast(5))) {
                found.append(StoredDocument(folder: settings.folder, name: name, place: DocumentPlace(route: SettingsStore.route, key: key)))
            } else if name.hasSuffix(times), let key = UserKey(String(name.dropLast(times.count))) {
                found.append(StoredDocument(folder: settings.folder, name: name, place: SettingsStore.timesPlace(key)))
            }
        }
        for keyName in try entries(Sys.path(root, "/", InboxStore.route.name)) {
            guard let key = UserKey(keyName) else { continue }
            let inbox = InboxStore(root: root, key: key, integrity: integrity)
            for name in try entries(inbox.messagesDirectory) where name.hasSuffix(".json") {
                guard let id = MessageID(String(name.dropLast(5))) else { continue }
                found.append(StoredDocument(
                    folder: inbox.messages, name: name, place: DocumentPlace(route: InboxStore.route, key: key, id: id)))
            }
        }
        return found
    }

    /// The names in a directory, sorted, without `.`, `..` and temporary files;
    /// empty when the directory does not exist.
    static func entries(_ directory: String) throws -> [String] {
        try Sys.names(in: directory).filter { !$0.hasPrefix(AtomicFile.temporaryPrefix) }.sorted()
    }

    /// Runs `body` under the lock that writers of `document` take.
    package static func withWriterLock<T>(root: String, _ document: StoredDocument, _ body: () throws -> T) throws -> T {
        try KeyLock.withLock(root: root, route: document.place.route, key: document.place.key, body)
    }
}
