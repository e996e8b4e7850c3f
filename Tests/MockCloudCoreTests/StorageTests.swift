import Dispatch
import Glibc
import MockCloudCore
import Testing

/// Paths are joined in one string of exactly their bytes.
@Suite struct PathJoinTests {
    @Test func partsAreJoinedInOrder() {
        #expect(Sys.path("/data", "/", "user_settings") == "/data/user_settings")
        #expect(Sys.path("/d", "/", ".locks", ".", "u1", ".lock") == "/d/.locks.u1.lock")
        #expect(Sys.path("", "") == "")
        #expect(Sys.path("k", ".json") == "k.json")
    }

    @Test func longAndNonASCIIPartsKeepEveryByte() {
        let long = String(repeating: "x", count: 300)
        let joined = Sys.path("/tmp/caf\u{e9}", "/", long, "/\u{1F600}")
        #expect(Array(joined.utf8) == Array("/tmp/caf\u{e9}/".utf8) + Array(long.utf8) + Array("/\u{1F600}".utf8))
        #expect(joined.utf8.count == 10 + 1 + 300 + 5)
    }
}

/// Atomic whole-file writes: 0600 files in 0700 folders, no temporary file
/// left behind, the old file intact when a write fails.
@Suite struct AtomicFileTests {
    let data: TemporaryDirectory

    init() throws { data = try TemporaryDirectory() }

    @Test func writeCreatesMissingFoldersAs0700AndTheFileAs0600() throws {
        try AtomicFile.write(Array("{}".utf8), to: "k.json", in: data.file("a/b"))
        #expect(data.bytes(of: "a/b/k.json") == Array("{}".utf8))
        #expect(data.mode(of: "a") == 0o700)
        #expect(data.mode(of: "a/b") == 0o700)
        #expect(data.mode(of: "a/b/k.json") == 0o600)
        #expect(data.entries("a/b") == ["k.json"])
    }

    @Test func writeReplacesTheWholeFileAndLeavesNoTemporaryFile() throws {
        try AtomicFile.write(Array("a much longer first version".utf8), to: "k.json", in: data.path)
        try AtomicFile.write(Array("short".utf8), to: "k.json", in: data.path)
        #expect(data.bytes(of: "k.json") == Array("short".utf8))
        #expect(data.entries() == ["k.json"])
    }

    @Test func writeMakesAFileWrittenByAnotherProgramPrivate() throws {
        try data.write("python", to: "k.json")
        chmod(data.file("k.json"), 0o644)
        try AtomicFile.write(Array("swift".utf8), to: "k.json", in: data.path)
        #expect(data.mode(of: "k.json") == 0o600)
        #expect(data.text(of: "k.json") == "swift")
    }

    @Test func anEmptyWriteIsAnEmptyFile() throws {
        try AtomicFile.write([], to: "k.json", in: data.path)
        #expect(data.bytes(of: "k.json") == [])
    }

    @Test func readReturnsTheBytesOrNilWhenAbsent() throws {
        #expect(try AtomicFile.read("k.json", in: data.path) == nil)
        #expect(try AtomicFile.read("k.json", in: data.file("no/such/folder")) == nil)
        try data.write([0x00, 0xFF, 0x7B], to: "k.json")
        #expect(try AtomicFile.read("k.json", in: data.path) == [0x00, 0xFF, 0x7B])
    }

    @Test func readOfALargeFileReturnsEveryByte() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try AtomicFile.write(bytes, to: "big", in: data.path)
        #expect(try AtomicFile.read("big", in: data.path) == bytes)
    }

    @Test func removeDeletesTheFileThenReportsItWasNotThere() throws {
        try data.write("x", to: "k.json")
        #expect(try AtomicFile.remove("k.json", in: data.path) == true)
        #expect(data.entries() == [])
        #expect(try AtomicFile.remove("k.json", in: data.path) == false)
    }

    @Test func aFailedRenameRemovesTheTemporaryFileAndSaysNothingWasWritten() throws {
        // The target is a folder (someone made it by hand): rename(2) fails with EISDIR.
        try data.write("keep", to: "k.json/inside")
        #expect {
            try AtomicFile.write(Array("new".utf8), to: "k.json", in: data.path)
        } throws: { error in
            let storage = error as? StorageError
            return storage?.cause.call == "rename" && storage?.cause.errno == EISDIR && storage?.status == 500
                && storage?.message == "storage failed; nothing was written and the stored data is unchanged"
        }
        #expect(data.entries() == ["k.json"])
        #expect(data.text(of: "k.json/inside") == "keep")
    }

    @Test func aTemporaryFileLeftByAKilledWriterIsReplacedNotKept() throws {
        try AtomicFile.write(Array("old".utf8), to: "k.json", in: data.path)
        try data.write("half a document", to: ".~k.json")
        try AtomicFile.write(Array("new".utf8), to: "k.json", in: data.path)
        #expect(data.text(of: "k.json") == "new")
        #expect(data.entries() == ["k.json"])
    }

    @Test func whenNoTemporaryFileCanBeCreatedTheOldFileIsIntact() throws {
        try AtomicFile.write(Array("old".utf8), to: "k.json", in: data.path)
        // The temporary name is taken by a directory, which unlink cannot remove.
        #expect(mkdir(data.file(".~k.json"), 0o700) == 0)
        #expect {
            try AtomicFile.write(Array("new".utf8), to: "k.json", in: data.path)
        } throws: { error in
            (error as? StorageError)?.status == 500 && (error as? StorageError)?.writing == true
        }
        #expect(data.text(of: "k.json") == "old")
    }

    @Test func aDataRootThatIsAFileCannotBeWritten() throws {
        try data.write("not a folder", to: "root")
        #expect {
            try AtomicFile.write(Array("x".utf8), to: "k.json", in: data.file("root/user_settings"))
        } throws: { error in
            let storage = error as? StorageError
            return storage?.cause.call == "mkdir" && storage?.cause.errno == ENOTDIR && storage?.writing == true
        }
    }

    @Test func readingAFolderAsAFileIsAReadFailure() throws {
        try data.write("", to: "k.json/inside")
        #expect {
            _ = try AtomicFile.read("k.json", in: data.path)
        } throws: { error in
            let storage = error as? StorageError
            return storage?.cause.errno == EISDIR && storage?.writing == false && storage?.status == 500
                && storage?.message == "reading the stored data failed"
        }
    }

    @Test(.enabled(if: geteuid() != 0, "root ignores permission bits"))
    func aReadOnlyFolderIsNotWritableAndTheOldFileIsIntact() throws {
        try AtomicFile.write(Array("old".utf8), to: "k.json", in: data.path)
        chmod(data.path, 0o500)
        defer { chmod(data.path, 0o700) }
        #expect {
            try AtomicFile.write(Array("new".utf8), to: "k.json", in: data.path)
        } throws: { error in
            (error as? StorageError)?.message
                == "the data directory is not writable; nothing was written and the stored data is unchanged"
        }
        #expect(data.text(of: "k.json") == "old")
    }
}

/// What the client is told when storage fails; the errno goes to stderr.
@Suite struct StorageErrorTests {
    static let unchanged = "; nothing was written and the stored data is unchanged"

    @Test(arguments: [
        (ENOSPC, true, 507, "the data directory is full" + unchanged),
        (EDQUOT, true, 507, "the data directory is full" + unchanged),
        (EACCES, true, 500, "the data directory is not writable" + unchanged),
        (EPERM, true, 500, "the data directory is not writable" + unchanged),
        (EROFS, true, 500, "the data directory is not writable" + unchanged),
        (EIO, true, 500, "storage failed" + unchanged),
        (EACCES, false, 500, "the stored data is not readable"),
        (EIO, false, 500, "reading the stored data failed"),
    ] as [(Int32, Bool, Int, String)])
    func eachFailureHasItsStatusAndSentence(_ code: Int32, _ writing: Bool, _ status: Int, _ message: String) {
        let error = StorageError(SystemError("rename", path: "/data/user_settings/u1.json", errno: code), writing: writing)
        #expect(error.status == status)
        #expect(error.message == message)
        #expect(error.logDetail == "rename /data/user_settings/u1.json: " + String(cString: strerror(code)))
    }

    @Test func aFullDiskIsAnswered507WithItsSentence() {
        let error = StorageError(SystemError("write", path: "/d/.~u1.json", errno: ENOSPC), writing: true)
        #expect(CGIResponse.error(error).wire
            == "Status: 507 Insufficient Storage\r\nContent-Type: application/json\r\nContent-Length: 93\r\n\r\n"
            + #"{"error": "the data directory is full; nothing was written and the stored data is unchanged"}"#)
        #expect(error.logDetail == "write /d/.~u1.json: No space left on device")
    }

    @Test func aPermissionFailureIsAnswered500WithItsSentence() {
        let error = StorageError(SystemError("open", path: "/d/x", errno: EACCES), writing: true)
        #expect(CGIResponse.error(error).text
            == #"{"error": "the data directory is not writable; nothing was written and the stored data is unchanged"}"#)
        #expect(error.logDetail == "open /d/x: Permission denied")
    }

    @Test func aSystemErrorWithoutPathNamesTheCallOnly() {
        #expect(SystemError("fsync", errno: EIO).description == "fsync: Input/output error")
        #expect(SystemError("fsync", errno: EIO).isNoSpace == false)
        #expect(SystemError("fsync", errno: EDQUOT).isNoSpace)
        #expect(SystemError("fsync", errno: EROFS).isNotWritable)
    }
}

/// Per-key `flock`s: one key at a time, different keys independent.
@Suite struct KeyLockTests {
    let data: TemporaryDirectory
    let key = UserKey("u1")!

    init() throws { data = try TemporaryDirectory() }

    /// True when another open file description can take the lock right now.
    func isFree(_ relative: String, shared: Bool = false) -> Bool {
        let fd = open(data.file(relative), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return testFlock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0
    }

    @Test func theLockIsHeldWhileTheBodyRunsAndReleasedAfter() throws {
        let heldInside = try KeyLock.withLock(root: data.path, scope: "user_settings", key: key) {
            isFree(".locks/user_settings.u1.lock")
        }
        #expect(heldInside == false)
        #expect(isFree(".locks/user_settings.u1.lock"))
    }

    @Test func anExclusiveLockKeepsOutReadersToo() throws {
        let readerGotIn = try KeyLock.withLock(root: data.path, scope: "inbox", key: key) {
            isFree(".locks/inbox.u1.lock", shared: true)
        }
        #expect(readerGotIn == false)
    }

    @Test func aSharedLockAdmitsOtherReadersButNoWriter() throws {
        let (reader, writer) = try KeyLock.withLock(root: data.path, scope: "inbox", key: key, shared: true) {
            (isFree(".locks/inbox.u1.lock", shared: true), isFree(".locks/inbox.u1.lock"))
        }
        #expect(reader == true)
        #expect(writer == false)
        #expect(isFree(".locks/inbox.u1.lock"))
    }

    @Test func lockFilesArePrivate() throws {
        try KeyLock.withLock(root: data.path, scope: "user_settings", key: key) {}
        #expect(data.entries(".locks") == ["user_settings.u1.lock"])
        #expect(data.mode(of: ".locks") == 0o700)
        #expect(data.mode(of: ".locks/user_settings.u1.lock") == 0o600)
    }

    @Test func otherKeysAndOtherScopesAreNotLocked() throws {
        let free = try KeyLock.withLock(root: data.path, scope: "user_settings", key: key) {
            (isFree(".locks/user_settings.u2.lock"), isFree(".locks/inbox.u1.lock"))
        }
        #expect(free == (true, true))
    }

    @Test func theBodysErrorPassesThroughAndTheLockIsReleased() throws {
        struct Refused: Error, Equatable {}
        #expect(throws: Refused()) {
            try KeyLock.withLock(root: data.path, scope: "user_settings", key: key) { throw Refused() }
        }
        #expect(isFree(".locks/user_settings.u1.lock"))
    }

    @Test func aRootThatCannotHoldLocksIsAStorageError() throws {
        try data.write("file", to: "root")
        #expect {
            try KeyLock.withLock(root: data.file("root"), scope: "user_settings", key: key) {}
        } throws: { error in
            (error as? StorageError)?.cause.errno == ENOTDIR && (error as? StorageError)?.writing == true
        }
    }
}

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
