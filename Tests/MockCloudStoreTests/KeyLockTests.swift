import Dispatch
import Glibc
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

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
        let heldInside = try KeyLock.withLock(root: data.path, store: .userSettings, key: key) {
            isFree(".locks/user_settings.u1.lock")
        }
        #expect(heldInside == false)
        #expect(isFree(".locks/user_settings.u1.lock"))
    }

    @Test func anExclusiveLockKeepsOutReadersToo() throws {
        let readerGotIn = try KeyLock.withLock(root: data.path, store: .inbox, key: key) {
            isFree(".locks/inbox.u1.lock", shared: true)
        }
        #expect(readerGotIn == false)
    }

    @Test func aSharedLockAdmitsOtherReadersButNoWriter() throws {
        let (reader, writer) = try KeyLock.withLock(root: data.path, store: .inbox, key: key, shared: true) {
            (isFree(".locks/inbox.u1.lock", shared: true), isFree(".locks/inbox.u1.lock"))
        }
        #expect(reader == true)
        #expect(writer == false)
        #expect(isFree(".locks/inbox.u1.lock"))
    }

    @Test func lockFilesArePrivate() throws {
        try KeyLock.withLock(root: data.path, store: .userSettings, key: key) {}
        #expect(data.entries(".locks") == ["user_settings.u1.lock"])
        #expect(data.mode(of: ".locks") == 0o700)
        #expect(data.mode(of: ".locks/user_settings.u1.lock") == 0o600)
    }

    @Test func otherKeysAndOtherScopesAreNotLocked() throws {
        let free = try KeyLock.withLock(root: data.path, store: .userSettings, key: key) {
            (isFree(".locks/user_settings.u2.lock"), isFree(".locks/inbox.u1.lock"))
        }
        #expect(free == (true, true))
    }

    @Test func theBodysErrorPassesThroughAndTheLockIsReleased() throws {
        struct Refused: Error, Equatable {}
        #expect(throws: Refused()) {
            try KeyLock.withLock(root: data.path, store: .userSettings, key: key) { throw Refused() }
        }
        #expect(isFree(".locks/user_settings.u1.lock"))
    }

    @Test func aRootThatCannotHoldLocksIsAStorageError() throws {
        try data.write("file", to: "root")
        #expect {
            try KeyLock.withLock(root: data.file("root"), store: .userSettings, key: key) {}
        } throws: { error in
            (error as? StorageError)?.cause.errno.rawValue == ENOTDIR && (error as? StorageError)?.phase == .writing
        }
    }
}
