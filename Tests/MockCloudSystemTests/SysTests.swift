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

/// The connection a CGI program inherited (fcgiwrap's to the server): the
/// first connected stream socket it holds; listening and datagram sockets
/// are passed over.
@Suite struct InheritedConnectionTests {
    @Test func aConnectedStreamSocketIsFoundAndNoListenerOrDatagramSocket() throws {
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        #expect(withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sa_family_t>.size)) }
        } == 0)  // an abstract address the kernel picks
        #expect(listen(listener, 1) == 0)
        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { for fd in [listener, datagram, pair[0], pair[1]] { close(fd) } }
        let found = Sys.inheritedConnection()
        #expect(found?.rawValue != listener && found?.rawValue != datagram)
        // Tests running beside this one may hold descriptors of their own:
        // when the pair lies among the descriptors looked at, something is found.
        if pair[0] < 64 {
            let fd = try #require(found).rawValue
            var type: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            #expect(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == Int32(SOCK_STREAM.rawValue))
        }
    }
}
