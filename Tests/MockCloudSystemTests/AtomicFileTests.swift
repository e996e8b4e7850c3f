import Dispatch
import Glibc
import MockCloudSystem
import MockCloudTestSupport
import Testing

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
            let failure = error as? AtomicWriteError
            return failure?.cause.call == "rename" && failure?.cause.errno.rawValue == EISDIR && failure?.cause.isNoSpace == false
                && failure?.seen == .nothing
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
            (error as? AtomicWriteError)?.cause.isNoSpace == false && (error as? AtomicWriteError)?.seen == .nothing
        }
        #expect(data.text(of: "k.json") == "old")
    }

    @Test func aDataRootThatIsAFileCannotBeWritten() throws {
        try data.write("not a folder", to: "root")
        #expect {
            try AtomicFile.write(Array("x".utf8), to: "k.json", in: data.file("root/user_settings"))
        } throws: { error in
            let failure = error as? AtomicWriteError
            return failure?.cause.call == "mkdir" && failure?.cause.errno.rawValue == ENOTDIR && failure?.seen == .nothing
        }
    }

    @Test func readingAFolderAsAFileIsAReadFailure() throws {
        try data.write("", to: "k.json/inside")
        #expect {
            _ = try AtomicFile.read("k.json", in: data.path)
        } throws: { error in
            let failure = error as? SystemError
            return failure?.errno.rawValue == EISDIR && failure?.isNoSpace == false && failure?.isNotWritable == false
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
            (error as? AtomicWriteError)?.seen == .nothing && (error as? AtomicWriteError)?.cause.isNotWritable == true
        }
        #expect(data.text(of: "k.json") == "old")
    }
}
