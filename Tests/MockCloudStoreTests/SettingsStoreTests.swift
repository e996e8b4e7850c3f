import Dispatch
import Glibc
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// `<data>/user_settings/<key>.json`, changed only under the key's lock.
@Suite struct SettingsStoreTests {
    let data: TemporaryDirectory
    let store: SettingsStore
    let key = UserKey("u1")!

    init() throws {
        data = try TemporaryDirectory()
        store = SettingsStore(root: data.path)
    }

    @Test func filesLiveWherePythonPutsThem() {
        #expect(store.directory == data.path + "/user_settings")
        #expect(store.fileName(for: key) == "u1.json")
    }

    @Test func readIsNilWhenNothingIsStored() throws {
        #expect(try store.read(key) == nil)
    }

    @Test func updateWritesWhatDecideReturnsAndPassesOnItsResult() throws {
        let seen = try store.update(key) { current in (SettingsStore.Change.write(Array("v1".utf8)), current) }
        #expect(seen == nil)
        #expect(try store.read(key) == Array("v1".utf8))
        #expect(data.entries("user_settings") == ["u1.json"])
        #expect(data.mode(of: "user_settings/u1.json") == 0o600)
        #expect(data.entries(".locks") == ["user_settings.u1.lock"])
    }

    @Test func updateSeesTheCurrentBytes() throws {
        try data.write("old", to: "user_settings/u1.json")
        let seen = try store.update(key) { current in (SettingsStore.Change.write(Array("new".utf8)), current) }
        #expect(seen == Array("old".utf8))
        #expect(data.text(of: "user_settings/u1.json") == "new")
    }

    @Test func updateCanDelete() throws {
        try data.write("old", to: "user_settings/u1.json")
        try store.update(key) { _ in (SettingsStore.Change.delete, ()) }
        #expect(data.entries("user_settings") == [])
        // Deleting what is not there is not an error for the store.
        try store.update(key) { _ in (SettingsStore.Change.delete, ()) }
    }

    @Test func aDecisionThatThrowsChangesNothing() throws {
        struct Refused: Error, Equatable {}
        try data.write("old", to: "user_settings/u1.json")
        #expect(throws: Refused()) {
            try store.update(key) { _ -> (SettingsStore.Change, Void) in throw Refused() }
        }
        #expect(data.text(of: "user_settings/u1.json") == "old")
    }

    @Test func concurrentUpdatesOfOneKeyAreSerialised() throws {
        // Read-modify-write of a counter from four threads: without the lock
        // some increments would be lost.
        let root = data.path
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let store = SettingsStore(root: root)
            let key = UserKey("u1")!
            for _ in 0..<25 {
                do {
                    try store.update(key) { bytes -> (SettingsStore.Change, Void) in
                        let count = Int(String(decoding: bytes ?? Array("0".utf8), as: UTF8.self)) ?? -1_000
                        usleep(100)
                        return (.write(Array(String(count + 1).utf8)), ())
                    }
                } catch {
                    Issue.record("update failed: \(error)")
                }
            }
        }
        #expect(data.text(of: "user_settings/u1.json") == "100")
        #expect(data.entries("user_settings") == ["u1.json"])
    }
}
