import Glibc
import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudStore
import MockCloudSystem
import MockCloudWire
import Testing

/// A FastCGI worker serves request after request in one process: nothing
/// of one reaches the next (its environment, its body, whether its change
/// had begun), each answer goes to its own request id, with its log lines
/// on that request's STDERR, and a refused body leaves the connection ready
/// for the next request.
@Suite(.serialized) struct FastCGIWorkerTests {
    /// Sends `bytes` on a kept connection, lets one worker serve it to its
    /// end (`handler` answering each request), and reads the answers.
    static func serve(
        _ bytes: [UInt8], bodyLimit: Int = 100, _ handler: (CGIRequest, inout Upkeep) throws -> CGIResponse
    ) throws -> (served: Int, answers: [UInt16: FastCGITestClient.Answer]) {
        let (server, client) = FastCGITestClient.socketPair()
        defer { close(client) }
        FastCGITestClient.send(client, bytes)
        shutdown(client, Int32(SHUT_WR))
        let served = FastCGIProgram.serve(
            connection: FileDescriptor(rawValue: server), listening: .closed, name: "unit-test", bodyLimit: bodyLimit,
            left: Int.max, handler)
        close(server)
        return (served, try FastCGITestClient.answers(try FastCGITestClient.receive(client)).byID)
    }

    struct Unexpected: Error {}

    @Test func twoRequestsInARowShareNothing() throws {
        let first = FastCGITestClient.request(
            id: 1, keepConnection: true, method: "PUT", path: "/x", headers: ["X-User-Key": "alice"], body: Array("{}".utf8))
        let second = FastCGITestClient.request(id: 2, keepConnection: true, method: "PUT", path: "/x")
        var seen: [(key: String?, body: [UInt8])] = []
        let (served, answers) = try Self.serve(first + second) { request, _ in
            seen.append((request.header(HTTPHeader.userKey), request.body))
            // The first request's change becomes visible, then something unexpected fails.
            if seen.count == 1 { WriteProgress.beginVisibleChange() }
            throw Unexpected()
        }
        #expect(served == 2)
        #expect(seen.count == 2)
        #expect(seen.first?.key == "alice" && seen.first?.body == Array("{}".utf8))
        #expect(seen.last?.key == nil && seen.last?.body == [])
        let one = try #require(answers[1])
        let two = try #require(answers[2])
        #expect(one.status == 500 && one.body.contains(#""changed": "maybe""#))
        // Had the first request's progress carried over, the second would say "maybe" too.
        #expect(two.status == 500 && two.body.contains(#""changed": "no""#))
        // Each request's log line on its own STDERR.
        #expect(one.log.contains("mockcloud unit-test: unexpected error") && two.log.contains("unexpected error"))
        #expect(one.end?.appStatus == 0 && two.end?.appStatus == 0)
    }

    @Test func aBodyOverTheLimitIsRefusedAndTheNextRequestIsServed() throws {
        let big = FastCGITestClient.request(
            id: 1, keepConnection: true, method: "PUT", path: "/x", body: [UInt8](repeating: 0x20, count: 1000))
        let small = FastCGITestClient.request(id: 2, keepConnection: true, method: "PUT", path: "/x", body: Array("ok".utf8))
        var bodies: [[UInt8]] = []
        let (served, answers) = try Self.serve(big + small, bodyLimit: 100) { request, _ in
            bodies.append(request.body)
            return CGIResponse(status: 200, body: request.body)
        }
        #expect(served == 2)
        #expect(answers[1]?.status == 413)
        #expect(answers[2]?.status == 200 && answers[2]?.body == "ok")
        #expect(bodies == [Array("ok".utf8)])
    }

    @Test func aHeadAnswerHasNoBodyAndAConnectionNotKeptEndsAfterItsRequest() throws {
        let head = FastCGITestClient.request(id: 5, method: "HEAD", path: "/x")
        let ignored = FastCGITestClient.request(id: 6, method: "GET", path: "/x")
        let (served, answers) = try Self.serve(head + ignored) { _, _ in CGIResponse(status: 200, body: Array(#"{"a": "b"}"#.utf8)) }
        #expect(served == 1)
        #expect(answers[5]?.status == 200 && answers[5]?.body == "" && answers[5]?.text.contains("Content-Length: 10") == true)
        #expect(answers[6] == nil)
    }

    @Test func aBrokenRecordClosesTheConnectionWithoutAnAnswer() throws {
        var bytes = FastCGITestClient.request(id: 1, method: "GET", path: "/x")
        bytes[0] = 9
        var called = false
        let (served, answers) = try Self.serve(bytes) { _, _ in
            called = true
            return CGIResponse(status: 200)
        }
        #expect(served == 0 && !called && answers.isEmpty)
    }
}
