import MockCloudHTTP
import MockCloudStore
import Glibc
import MockCloudSystem
import Testing

/// The statuses the HTTP layer gives the errors of the layers below it.
@Suite struct DomainErrorStatusTests {
    @Test func keyFileAndIntegrityFailuresAreServerErrors() {
        #expect(KeyFileError.noKeys(path: "/k").status == 500)
        #expect(KeyFileError.tooOpen(path: "/k", mode: 0o100644).status == 500)
        #expect(IntegrityError(file: "/d/u1.json", reason: "edited").status == 500)
    }

    @Test func eachInboxErrorHasItsStatus() {
        #expect(InboxError.noMessage.status == 404)
        #expect(InboxError.inboxFull(limit: 1).status == 507)
        #expect(InboxError.malformedAnchor.status == 400)
        #expect(InboxError.anchorNotAnswerable(.compacted).status == 410)
        #expect(InboxError.damagedLog(path: "/l").status == 500)
        #expect(InboxError.damagedMessage(path: "/m").status == 500)
    }

    @Test func onlyAFullDiskWhileWritingIs507() {
        let full = SystemError("write", errno: ENOSPC)
        #expect(StorageError(full, .writing).status == 507)
        #expect(StorageError(full, .reading).status == 500)
        #expect(StorageError(full, .syncingAfterCommit).status == 500)
    }
}
