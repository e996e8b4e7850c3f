import Dispatch
import Glibc
import MockCloudSystem
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
