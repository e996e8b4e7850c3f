import Dispatch
import Glibc
import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

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
        let error = StorageError(SystemError("rename", path: "/data/user_settings/u1.json", errno: code), writing ? .writing : .reading)
        #expect(error.status.code == status)
        #expect(error.message == message)
        #expect(error.logDetail == "rename /data/user_settings/u1.json: " + String(cString: strerror(code)))
    }

    @Test func aFullDiskIsAnswered507WithItsSentence() {
        let error = StorageError(SystemError("write", path: "/d/.~u1.json", errno: ENOSPC), .writing)
        #expect(CGIResponse.error(error).wire
            == "Status: 507 Insufficient Storage\r\nContent-Type: application/json\r\nContent-Length: 93\r\n\r\n"
            + #"{"error": "the data directory is full; nothing was written and the stored data is unchanged"}"#)
        #expect(error.logDetail == "write /d/.~u1.json: No space left on device")
    }

    @Test func aPermissionFailureIsAnswered500WithItsSentence() {
        let error = StorageError(SystemError("open", path: "/d/x", errno: EACCES), .writing)
        #expect(CGIResponse.error(error).text
            == #"{"error": "the data directory is not writable; nothing was written and the stored data is unchanged"}"#)
        #expect(error.logDetail == "open /d/x: Permission denied")
    }

    @Test func aChangeMadeButNotSyncedSaysSoAndThatARetryIsSafe() {
        let error = StorageError(SystemError("fsync", path: "/d/inbox/u1/messages", errno: EIO), .syncingAfterCommit)
        #expect(error.status.code == 500)
        #expect(error.dataChange == .yes)
        #expect(error.message == "the change was made but syncing the data directory failed; it may not survive a"
            + " power loss. Retrying the same request is safe")
    }

    @Test(arguments: [(EIO, 500, "storage failed"), (ENOSPC, 507, "the data directory is full")] as [(Int32, Int, String)])
    func aBatchCutShortSaysSomeChangesWereMade(_ code: Int32, _ status: Int, _ start: String) {
        let error = StorageError(SystemError("rename", path: "/d/inbox/u1/messages/m2.json", errno: code), .partlyCommitted)
        #expect(error.status.code == status)
        #expect(error.dataChange == .maybe)
        #expect(error.message == start + " part-way: some of the changes were made and the others not."
            + " Retrying the same request is safe and makes the rest")
    }

    @Test func aWriteBelowTheFreeSpaceFloorIsA507ThatNamesBothFigures() {
        let error = FreeSpaceError(available: 3 << 20 | 1 << 19, floor: 64 << 20)
        #expect(error.status.code == 507)
        #expect(error.dataChange == .no)
        #expect(error.message == "the data directory is nearly full (3.5 MiB free, below the floor of 64.0 MiB kept"
            + " free for the system); nothing was written and the stored data is unchanged. Deleting still works; writes"
            + " resume once space is freed")
        #expect(error.logDetail?.contains("MOCKCLOUD_MIN_FREE_MB") == true)
    }
}
