import Glibc
import MockCloudSystem
import Testing

/// A failed call names itself, its path and its errno.
@Suite struct SystemErrorTests {
    @Test func aSystemErrorWithoutPathNamesTheCallOnly() {
        #expect(SystemError("fsync", errno: EIO).description == "fsync: Input/output error")
        #expect(SystemError("fsync", errno: EIO).isNoSpace == false)
        #expect(SystemError("fsync", errno: EDQUOT).isNoSpace)
        #expect(SystemError("fsync", errno: EROFS).isNotWritable)
    }
}
