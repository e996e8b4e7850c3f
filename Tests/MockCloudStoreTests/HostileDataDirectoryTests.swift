import Dispatch
import Glibc
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// A device on the LAN may send requests meant to fill the data directory
/// or plant files in it: requests that find nothing leave nothing behind,
/// and files the service did not make (links above all) are never followed.
@Suite struct HostileDataDirectoryTests {
    let data: TemporaryDirectory
    let key = UserKey("u1")!

    init() throws { data = try TemporaryDirectory() }

    /// Sets a file's modification time an hour back.
    func age(_ relative: String) {
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, data.file(relative), &times, 0) == 0)
    }

    // MARK: - Lock files exist only for keys that hold data

    @Test func readingAnEmptyInboxCreatesNothing() throws {
        let inbox = InboxStore(root: data.path, key: key)
        let page = try inbox.changes(after: .beginning, limit: 10, excludingSource: nil)
        #expect(page.messages.isEmpty)
        #expect(data.entries() == [])
    }

    @Test func aChangeThatFindsNothingCreatesNothing() throws {
        let store = SettingsStore(root: data.path)
        #expect(throws: (any Error).self) { try store.remove(key, given: Preconditions()) }
        #expect(data.entries() == [])
    }

    @Test func theLockFileGoesWithTheKeysData() throws {
        let store = SettingsStore(root: data.path)
        try store.replace(key, with: JSONObject(), given: Preconditions())
        #expect(data.entries(".locks") == ["user_settings.u1.lock"])
        try store.remove(key, given: Preconditions())
        #expect(data.entries(".locks") == [])
        #expect(data.entries("user_settings") == [])
    }

    @Test func aLockFileOfAKeyWithoutDataGoesWithItsNextChange() throws {
        try data.write("", to: ".locks/user_settings.u1.lock")  // left by an older version
        #expect(throws: SettingsError.self) {
            try SettingsStore(root: data.path).replace(self.key, with: JSONObject(), given: Preconditions(ifMatch: .any))
        }
        #expect(data.entries(".locks") == [])
    }

    /// A writer that waited on a lock file another writer removed must not
    /// go on under a lock nobody else can see: it starts again on the file
    /// now at the path.
    @Test func aWaiterOnARemovedLockFileLocksTheNewOne() throws {
        let lockPath = KeyLock.path(root: data.path, store: .userSettings, key: key)
        let first = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holderDone = DispatchSemaphore(value: 0)
        let root = data.path
        let key = self.key
        DispatchQueue.global().async {
            try? KeyLock.withLock(root: root, store: .userSettings, key: key, holdsData: { false }) {
                first.signal()
                release.wait()
            }
            holderDone.signal()
        }
        first.wait()
        // The holder removes its file (its key holds nothing) once this
        // thread is most likely waiting on it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { release.signal() }
        var heldAtPath = false
        try KeyLock.withLock(root: data.path, store: .userSettings, key: key) {
            // Another open file description cannot take the lock at the path.
            let fd = open(lockPath, O_RDWR | O_CLOEXEC)
            if fd >= 0 {
                heldAtPath = testFlock(fd, LOCK_EX | LOCK_NB) != 0
                close(fd)
            }
        }
        holderDone.wait()
        #expect(heldAtPath)
    }

    // MARK: - Temporary files of killed writers

    @Test func aWriteRemovesTheLeftoversOfKeysNoWriterHoldsAndKeepsALiveWritersFile() throws {
        try data.write("half", to: "user_settings/.~ghost.json")  // a killed first write: no lock file
        try data.write("half", to: "user_settings/.~ghost.json.mac")
        try data.write("{}", to: "user_settings/u2.json")
        try data.write("half", to: "user_settings/.~u2.json")  // u2's lock file exists, nobody holds it
        try data.write("being written", to: "user_settings/.~u3.json")  // u3's writer is at work
        let u2 = UserKey("u2")!, u3 = UserKey("u3")!
        try KeyLock.withLock(root: data.path, store: .userSettings, key: u2) {}
        try KeyLock.withLock(root: data.path, store: .userSettings, key: u3) {
            // Ages mean nothing: the live writer's file is older than the tidy interval.
            age("user_settings/.~u3.json")
            try SettingsStore(root: data.path, minimumFreeBytes: 0).replace(key, with: JSONObject(), given: Preconditions())
        }
        #expect(data.entries("user_settings") == [".~u3.json", "u1.json", "u2.json"])
        // The ghost's lock file, made to remove its leftovers, went with them.
        #expect(data.entries(".locks") == ["user_settings.u1.lock", "user_settings.u2.lock", "user_settings.u3.lock"])
    }

    // MARK: - Planted links are refused, never followed

    @Test func aPlantedLockFileLinkIsRefusedAndNotFollowed() throws {
        try data.write("", to: ".locks/keep")
        #expect(symlink(data.file("target"), data.file(".locks/user_settings.u1.lock")) == 0)
        #expect {
            try SettingsStore(root: data.path).replace(self.key, with: JSONObject(), given: Preconditions())
        } throws: { error in
            (error as? StorageError)?.isPlantedLink == true
        }
        #expect(data.bytes(of: "target") == nil)
    }

    @Test func aPlantedDocumentLinkIsNotReadThrough() throws {
        try data.write("{\"secret\": 1}", to: "outside.json")
        try data.write("", to: "user_settings/keep")
        #expect(symlink(data.file("outside.json"), data.file("user_settings/u1.json")) == 0)
        #expect {
            _ = try SettingsStore(root: data.path).read(self.key)
        } throws: { error in
            (error as? StorageError)?.isPlantedLink == true
        }
    }

    @Test func aPlantedInboxFolderLinkIsRefused() throws {
        try data.write("", to: "elsewhere/keep")
        try data.write("", to: "inbox/keep")
        #expect(symlink(data.file("elsewhere"), data.file("inbox/u1")) == 0)
        #expect {
            try InboxStore(root: data.path, key: self.key).checkDirectories()
        } throws: { error in
            (error as? StorageError)?.isPlantedLink == true
        }
    }

    // MARK: - Token scopes

    @Test func aTokenLineMayNameTheKeysItServes() throws {
        let (token, line) = AccessTokens.newToken(label: "phone", keys: [UserKey("alice")!, UserKey("bob")!])
        #expect(line.hasSuffix(" phone keys=alice,bob"))
        let (other, plain) = AccessTokens.newToken(label: "laptop")
        let tokens = try AccessTokens.parse(Array((line + "\n" + plain + "\n").utf8), path: "t")
        #expect(tokens.entry(for: token)?.keys == [UserKey("alice")!, UserKey("bob")!])
        #expect(tokens.entry(for: other)?.keys == nil)
        #expect(tokens.entry(for: "mct_unknown") == nil)
    }

    @Test func aMalformedKeyListIsAMalformedFile() throws {
        let hash = String(repeating: "ab", count: 32)
        for bad in ["keys=", "keys=a,,b", "keys=a/b", "keys=a keys=b"] {
            #expect(throws: KeyFileError.self) {
                try AccessTokens.parse(Array("sha256:\(hash) \(bad)\n".utf8), path: "t")
            }
        }
    }
}
