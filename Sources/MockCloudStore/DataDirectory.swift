import MockCloudSystem
import MockCloudWire

/// A data directory (`MOCKCLOUD_DATA`) and where everything lives in it,
/// spelled once (docs/API.md §5; the Python mock cloud's layout, and the
/// service's own files beside it):
///
///     <root>/user_settings/<key>.json        a user's settings (.sig: its MAC, .times: its member times)
///     <root>/inbox/<key>/changes.log         the order of a key's inbox changes
///     <root>/inbox/<key>/messages/<id>.json  each message's latest state
///     <root>/.locks/<store>.<key>.lock       a key's lock (`KeyLock`)
///     <root>/.locks/waiting.<n>.lock         a place of a waiting request (`Waiting`)
///     <root>/.locks/waiting.lock             the turn to count and take one
///     <root>/.locks/<marker>                 what one process tells the next
package struct DataDirectory: Sendable {
    package let root: String

    package init(_ root: String) {
        self.root = root
    }

    /// `<root>/user_settings` or `<root>/inbox`.
    package func folder(_ store: StoreName) -> String { Sys.path(root, "/", store.name) }

    /// `<root>/inbox/<key>`.
    package func inbox(_ key: UserKey) -> String { Sys.path(root, "/", StoreName.inbox.name, "/", key.rawValue) }

    /// The folder of an inbox's message files, in `inbox(key)`.
    package static let messagesFolder = "messages"

    /// `<root>/inbox/<key>/messages`.
    package func messages(_ key: UserKey) -> String {
        Sys.path(root, "/", StoreName.inbox.name, "/", key.rawValue, "/" + Self.messagesFolder)
    }

    /// `<root>/inbox/<key>/changes.log`.
    package func changeLog(_ key: UserKey) -> String {
        Sys.path(root, "/", StoreName.inbox.name, "/", key.rawValue, "/changes.log")
    }

    /// `<root>/.locks`: every lock file, and nothing else a reader of the
    /// stores looks at.
    package var locks: String { Sys.path(root, "/.locks") }

    /// `<root>/.locks/<store>.<key>.lock`.
    package func lockFile(_ store: StoreName, _ key: UserKey) -> String {
        Sys.path(root, "/.locks/", store.name, ".", key.rawValue, ".lock")
    }

    /// `<root>/.locks/waiting.<n>.lock`.
    package func waitingPlace(_ n: Int) -> String { Sys.path(root, "/.locks/waiting.", String(n), ".lock") }

    /// `<root>/.locks/waiting.lock`: held while a process counts the places
    /// and takes one.
    package var waitingTurn: String { Sys.path(root, "/.locks/waiting.lock") }

    /// `<root>/.locks/<name>`: a file whose existence one process leaves the next.
    package func marker(_ name: String) -> String { Sys.path(root, "/.locks/", name) }

    /// Makes `locks` when it is missing, never through a planted link (a
    /// link there is refused: `SystemError`).
    package func makeLocks() throws {
        let directory = locks
        try Sys.checkDirectory(directory)
        try Sys.makeDirectories(directory)
    }

    /// The documents under `root`, in a stable order, with the member times
    /// beside settings (signed like them); temporary files and sidecars are
    /// skipped.
    package static func documents(root: String, integrity: Integrity) throws -> [StoredDocument] {
        var found: [StoredDocument] = []
        let settings = SettingsStore(root: root, integrity: integrity)
        let times = ".json" + SettingsStore.timesSuffix
        for name in try entries(settings.directory) {
            if name.hasSuffix(".json"), let key = UserKey(String(name.dropLast(5))) {
                found.append(StoredDocument(folder: settings.folder, name: name, place: DocumentPlace(store: SettingsStore.storeName, key: key)))
            } else if name.hasSuffix(times), let key = UserKey(String(name.dropLast(times.count))) {
                found.append(StoredDocument(folder: settings.folder, name: name, place: SettingsStore.timesPlace(key)))
            }
        }
        for keyName in try entries(DataDirectory(root).folder(.inbox)) {
            guard let key = UserKey(keyName) else { continue }
            let inbox = InboxStore(root: root, key: key, integrity: integrity)
            for name in try entries(inbox.messagesDirectory) where name.hasSuffix(".json") {
                guard let id = MessageID(String(name.dropLast(5))) else { continue }
                found.append(StoredDocument(
                    folder: inbox.messages, name: name, place: DocumentPlace(store: InboxStore.storeName, key: key, id: id)))
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
        try KeyLock.withLock(root: root, store: document.place.store, key: document.place.key, body)
    }
}
