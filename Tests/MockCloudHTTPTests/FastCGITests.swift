import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import Testing

/// The FastCGI records a worker reads and writes, as nginx sends them: a
/// request arrives whole however its bytes are cut, the management records
/// get their answers, and whatever breaks the protocol closes the connection
/// instead of being guessed at.
@Suite struct FastCGITests {
    /// Runs `bytes` through a reader and a connection state, in pieces of `piece` bytes.
    static func steps(_ bytes: [UInt8], piece: Int = Int.max, bodyLimit: Int = 100) throws -> [FastCGIConnectionState.Step] {
        var reader = FastCGIRecordReader()
        var state = FastCGIConnectionState(bodyLimit: bodyLimit)
        var steps: [FastCGIConnectionState.Step] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + min(piece, bytes.count))
            reader.append(Array(bytes[start..<end]))
            start = end
            while let record = try reader.next() { steps.append(try state.take(record)) }
        }
        return steps
    }

    static func requests(_ steps: [FastCGIConnectionState.Step]) -> [FastCGIRequest] {
        steps.compactMap { if case .request(let request) = $0 { return request } else { return nil } }
    }

    static func replies(_ steps: [FastCGIConnectionState.Step]) -> [[UInt8]] {
        steps.compactMap {
            switch $0 {
            case .reply(let bytes), .aborted(let bytes): return bytes
            default: return nil
            }
        }
    }

    static let params = [("REQUEST_METHOD", "PUT"), ("DOCUMENT_URI", "/user/settings"), ("CONTENT_LENGTH", "11"),
                         ("HTTP_X_USER_KEY", "alice"), ("LONG", String(repeating: "v", count: 300))]

    @Test(arguments: [1, 3, 8, 9, 4096])
    func aRequestCutAnywhereArrivesWhole(piece: Int) throws {
        let bytes = FastCGITestClient.request(id: 7, params: Self.params, body: Array("hello world".utf8), piece: 4)
        let requests = Self.requests(try Self.steps(bytes, piece: piece))
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        #expect(request.requestID == 7)
        #expect(!request.keepConnection)
        #expect(request.params.map(\.name) == Self.params.map(\.0))
        #expect(request.params.map(\.value) == Self.params.map(\.1))
        #expect(request.body == Array("hello world".utf8))
        #expect(request.bodyLength == 11)
    }

    @Test func namesAndValuesOf128BytesOrMoreTakeFourLengthBytes() throws {
        var bytes: [UInt8] = []
        let long = Array(String(repeating: "x", count: 128).utf8)
        FastCGI.appendPair(long, Array("v".utf8), to: &bytes)
        #expect(Array(bytes[0..<5]) == [0x80, 0, 0, 128, 1])
        let pairs = try FastCGI.pairs(bytes)
        #expect(pairs.count == 1 && pairs[0].name.utf8.count == 128 && pairs[0].value == "v")
    }

    @Test(arguments: [[3, 1, 0x41, 0x42], [0x80, 0, 0], [1], [0x80, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x41]] as [[UInt8]])
    func pairsThatRunPastTheirRecordAreRefused(_ bytes: [UInt8]) {
        #expect(throws: FastCGIError.malformedPairs) { try FastCGI.pairs(bytes) }
    }

    @Test func aNameGivenTwiceIsTheFirstValueAndReportedRepeated() {
        let environment = FastCGI.environment([("HTTP_X_USER_KEY", "a"), ("HTTP_X_USER_KEY", "b"), ("OTHER", "c")])
        #expect(environment["HTTP_X_USER_KEY"] == "a")
        #expect(environment.isRepeated("HTTP_X_USER_KEY"))
        #expect(!environment.isRepeated("OTHER"))
    }

    @Test func aRecordOfAnotherVersionClosesTheConnection() {
        var bytes = FastCGITestClient.request(params: Self.params)
        bytes[0] = 2
        #expect(throws: FastCGIError.unsupportedVersion(2)) { try Self.steps(bytes) }
    }

    @Test func stdinBeforeTheParamsEndClosesTheConnection() {
        var bytes: [UInt8] = []
        FastCGI.append(.beginRequest, 1, [0, 1, 0, 0, 0, 0, 0, 0][...], to: &bytes)
        FastCGI.append(.stdin, 1, [1, 2][...], to: &bytes)
        #expect(throws: FastCGIError.stdinBeforeParams) { try Self.steps(bytes) }
    }

    @Test func getValuesSaysOneConnectionOneRequestAndNoMultiplexing() throws {
        var query: [UInt8] = []
        for name in ["FCGI_MAX_CONNS", "FCGI_MAX_REQS", "FCGI_MPXS_CONNS", "UNKNOWN"] {
            FastCGI.appendPair(Array(name.utf8), [], to: &query)
        }
        var bytes: [UInt8] = []
        FastCGI.append(.getValues, 0, query[...], to: &bytes)
        let replies = Self.replies(try Self.steps(bytes))
        let others = try FastCGITestClient.answers(try #require(replies.first)).others
        #expect(others.count == 1 && others[0].type == FastCGI.RecordType.getValuesResult.rawValue)
        let values = try FastCGI.pairs(others[0].content)
        #expect(values.map(\.name) == ["FCGI_MAX_CONNS", "FCGI_MAX_REQS", "FCGI_MPXS_CONNS"])
        #expect(values.map(\.value) == ["1", "1", "0"])
    }

    @Test func anUnknownRecordTypeIsNamedInUnknownType() throws {
        var bytes: [UInt8] = []
        FastCGI.append(.getValues, 0, [][...], to: &bytes)
        bytes[1] = 42
        let replies = Self.replies(try Self.steps(bytes))
        let others = try FastCGITestClient.answers(try #require(replies.first)).others
        #expect(others.map(\.type) == [FastCGI.RecordType.unknownType.rawValue])
        #expect(others.first?.content.first == 42)
    }

    @Test func anotherRoleIsRefusedWithUnknownRole() throws {
        var bytes: [UInt8] = []
        FastCGI.append(.beginRequest, 3, [0, 2, 0, 0, 0, 0, 0, 0][...], to: &bytes)    // the authorizer
        let answer = try FastCGITestClient.answers(try #require(Self.replies(try Self.steps(bytes)).first)).byID[3]
        #expect(answer?.end?.protocolStatus == FastCGI.ProtocolStatus.unknownRole.rawValue)
    }

    @Test func aSecondRequestWhileOneIsInProgressIsRefusedAndTheFirstGoesOn() throws {
        var bytes: [UInt8] = []
        FastCGI.append(.beginRequest, 1, [0, 1, 0, 0, 0, 0, 0, 0][...], to: &bytes)
        FastCGI.append(.beginRequest, 2, [0, 1, 0, 0, 0, 0, 0, 0][...], to: &bytes)
        bytes += Array(FastCGITestClient.request(id: 1, params: Self.params).dropFirst(16))
        let steps = try Self.steps(bytes)
        let refusal = try FastCGITestClient.answers(try #require(Self.replies(steps).first)).byID[2]
        #expect(refusal?.end?.protocolStatus == FastCGI.ProtocolStatus.cannotMultiplex.rawValue)
        #expect(Self.requests(steps).map(\.requestID) == [1])
    }

    @Test func anAbortedRequestIsEndedUnansweredAndTheNextIsServed() throws {
        var bytes = Array(FastCGITestClient.request(id: 1, keepConnection: true, params: Self.params).dropLast(8))
        FastCGI.append(.abortRequest, 1, [][...], to: &bytes)
        bytes += FastCGITestClient.request(id: 2, params: Self.params, body: Array("hello world".utf8))
        let steps = try Self.steps(bytes)
        let ended = try FastCGITestClient.answers(try #require(Self.replies(steps).first)).byID[1]
        #expect(ended?.end?.appStatus == 1)
        #expect(Self.requests(steps).map(\.requestID) == [2])
        #expect(Self.requests(steps).first?.body == Array("hello world".utf8))
    }

    @Test func aBodyPastTheLimitIsCountedNotKept() throws {
        let body = [UInt8](repeating: 0x61, count: 1000)
        let request = try #require(Self.requests(try Self.steps(FastCGITestClient.request(params: Self.params, body: body, piece: 300),
                                                               bodyLimit: 100)).first)
        #expect(request.body.count == 101)
        #expect(request.bodyLength == 1000)
    }

    @Test func paramsPastTheirLimitCloseTheConnection() {
        let huge = String(repeating: "p", count: FastCGI.paramsLimit)
        let bytes = FastCGITestClient.request(params: [("A", huge)])
        #expect(throws: FastCGIError.paramsTooLarge) { try Self.steps(bytes) }
    }

    @Test func aLongAnswerIsCutIntoRecordsThenEndedOnce() throws {
        let output = [UInt8](repeating: 0x7a, count: 200_000)
        let answer = try #require(try FastCGITestClient.answers(FastCGI.answer(9, output)).byID[9])
        #expect(answer.stdout == output)
        #expect(answer.stdoutRecords == 5)    // 4 records of data, and the stream's end
        #expect(answer.end?.appStatus == 0)
        #expect(answer.end?.protocolStatus == FastCGI.ProtocolStatus.requestComplete.rawValue)
    }

    @Test func theWorkerArgumentsAreReadOrRefused() throws {
        #expect(try FastCGIProgram.Options.parse(["--fastcgi", "unix:/run/a.sock", "--workers", "3", "--max-requests", "1"])
            == FastCGIProgram.Options(socketPath: "/run/a.sock", workers: 3, maxRequests: 1))
        #expect(try FastCGIProgram.Options.parse(["--fastcgi", "systemd"]) == FastCGIProgram.Options())
        for wrong in [["--workers", "2"], ["--fastcgi"], ["--fastcgi", "tcp:1"], ["--fastcgi", "systemd", "--workers", "0"],
                      ["--fastcgi", "systemd", "--max-requests", "-1"], ["--other", "x"]] {
            #expect(throws: ConfigError.self, "\(wrong)") { try FastCGIProgram.Options.parse(wrong) }
        }
    }
}
