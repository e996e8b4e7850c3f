import MockCloudConfig

/// FastCGI 1.0 records (the specification of 1996), the subset nginx speaks
/// to a responder: BEGIN_REQUEST in the responder role, PARAMS, STDIN and
/// ABORT_REQUEST in; STDOUT, STDERR and END_REQUEST out; GET_VALUES
/// answered; one request at a time on a connection, kept open or not as
/// the server asks. Pure bytes in and out, so that the parser is unit
/// tested and fuzzed without a socket (Tests/Fuzz/FastCGIFuzz.swift).
package enum FastCGI {
    /// The record types.
    package enum RecordType: UInt8, Sendable {
        case beginRequest = 1, abortRequest, endRequest, params, stdin, stdout, stderr, data
        case getValues, getValuesResult, unknownType
    }

    /// END_REQUEST's protocol status.
    package enum ProtocolStatus: UInt8, Sendable {
        case requestComplete = 0, cannotMultiplex, overloaded, unknownRole
    }

    static let version: UInt8 = 1
    static let headerLength = 8
    /// The most content one record carries (a multiple of 8: no padding).
    static let largestContent = 65528
    static let responderRole: UInt16 = 1
    static let keepConnectionFlag: UInt8 = 1
    /// The most PARAMS bytes a request may bring: nginx sends a few KiB
    /// (its header buffers hold 32 KiB at most).
    package static let paramsLimit = 1 << 20

    /// One record's header and content.
    package struct Record: Sendable, Equatable {
        package var type: UInt8
        package var requestID: UInt16
        package var content: [UInt8]

        package init(type: UInt8, requestID: UInt16, content: [UInt8]) {
            self.type = type
            self.requestID = requestID
            self.content = content
        }

        package init(_ type: RecordType, requestID: UInt16, content: [UInt8] = []) {
            self.init(type: type.rawValue, requestID: requestID, content: content)
        }
    }

    /// Appends one record (content of at most `largestContent` bytes).
    package static func append(_ type: RecordType, _ requestID: UInt16, _ content: ArraySlice<UInt8>, to out: inout [UInt8]) {
        precondition(content.count <= 65535)
        out.append(version)
        out.append(type.rawValue)
        out.append(UInt8(requestID >> 8))
        out.append(UInt8(requestID & 0xff))
        out.append(UInt8(content.count >> 8))
        out.append(UInt8(content.count & 0xff))
        out.append(0)    // padding
        out.append(0)    // reserved
        out.append(contentsOf: content)
    }

    /// `bytes` as records of `type` (none for no bytes): a stream's data.
    package static func appendStream(_ type: RecordType, _ requestID: UInt16, _ bytes: [UInt8], to out: inout [UInt8]) {
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + largestContent)
            append(type, requestID, bytes[start..<end], to: &out)
            start = end
        }
    }

    /// END_REQUEST with an application status.
    package static func appendEnd(_ requestID: UInt16, status: ProtocolStatus, appStatus: UInt32 = 0, to out: inout [UInt8]) {
        let content: [UInt8] = [
            UInt8(appStatus >> 24), UInt8((appStatus >> 16) & 0xff), UInt8((appStatus >> 8) & 0xff), UInt8(appStatus & 0xff),
            status.rawValue, 0, 0, 0,
        ]
        append(.endRequest, requestID, content[...], to: &out)
    }

    /// A whole answer: `output` (a CGI response) on STDOUT, the stream's
    /// end, and END_REQUEST.
    package static func answer(_ requestID: UInt16, _ output: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(output.count + 32 + output.count / largestContent * 8)
        appendStream(.stdout, requestID, output, to: &out)
        append(.stdout, requestID, [], to: &out)
        appendEnd(requestID, status: .requestComplete, to: &out)
        return out
    }

    /// Name-value pairs (PARAMS, GET_VALUES): each length in one byte
    /// below 128, else in four with the top bit set.
    package static func appendPair(_ name: [UInt8], _ value: [UInt8], to out: inout [UInt8]) {
        for length in [name.count, value.count] {
            if length < 128 {
                out.append(UInt8(length))
            } else {
                out.append(UInt8((length >> 24) & 0x7f) | 0x80)
                out.append(UInt8((length >> 16) & 0xff))
                out.append(UInt8((length >> 8) & 0xff))
                out.append(UInt8(length & 0xff))
            }
        }
        out.append(contentsOf: name)
        out.append(contentsOf: value)
    }

    /// The pairs in `bytes`, in order; a length past the end throws.
    package static func pairs(_ bytes: [UInt8]) throws(FastCGIError) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var at = 0
        func length() throws(FastCGIError) -> Int {
            guard at < bytes.count else { throw .malformedPairs }
            let first = Int(bytes[at])
            if first < 128 {
                at += 1
                return first
            }
            guard at + 4 <= bytes.count else { throw .malformedPairs }
            let value = (first & 0x7f) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            at += 4
            return value
        }
        while at < bytes.count {
            let nameLength = try length()
            let valueLength = try length()
            guard nameLength <= bytes.count - at, valueLength <= bytes.count - at - nameLength else { throw .malformedPairs }
            let name = String(decoding: bytes[at..<at + nameLength], as: UTF8.self)
            at += nameLength
            let value = String(decoding: bytes[at..<at + valueLength], as: UTF8.self)
            at += valueLength
            result.append((name, value))
        }
        return result
    }

    /// The environment a request's PARAMS describe: the first value of a
    /// name given twice, which is reported as repeated (as the process
    /// environment reports a name fcgiwrap put there twice).
    package static func environment(_ pairs: [(name: String, value: String)]) -> Environment {
        var values: [String: String] = [:]
        var repeated: Set<String> = []
        for pair in pairs {
            if values[pair.name] == nil {
                values[pair.name] = pair.value
            } else {
                repeated.insert(pair.name)
            }
        }
        return Environment(values, repeated: repeated)
    }
}

/// A connection that breaks the protocol: it is closed, with no answer.
package enum FastCGIError: Error, Equatable, CustomStringConvertible {
    case unsupportedVersion(UInt8)
    case malformedPairs
    case malformedBeginRequest
    case paramsTooLarge
    case stdinBeforeParams

    package var description: String {
        switch self {
        case .unsupportedVersion(let version): return "a FastCGI record of version \(version) (only 1 is spoken)"
        case .malformedPairs: return "FastCGI name-value pairs run past their record"
        case .malformedBeginRequest: return "a FastCGI BEGIN_REQUEST record shorter than 8 bytes"
        case .paramsTooLarge: return "FastCGI PARAMS over \(FastCGI.paramsLimit) bytes"
        case .stdinBeforeParams: return "FastCGI STDIN before the PARAMS ended"
        }
    }
}

/// Records out of a byte stream, as it arrives in pieces.
package struct FastCGIRecordReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    package init() {}

    /// Bytes as they came from the connection.
    package mutating func append(_ bytes: [UInt8]) {
        if start == buffer.count {
            buffer = bytes
            start = 0
        } else {
            if start > 65536 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: bytes)
        }
    }

    /// The next whole record, or `nil` until more bytes come.
    package mutating func next() throws(FastCGIError) -> FastCGI.Record? {
        guard buffer.count - start >= FastCGI.headerLength else { return nil }
        let header = buffer[start..<start + FastCGI.headerLength]
        let version = header[start]
        guard version == FastCGI.version else { throw .unsupportedVersion(version) }
        let contentLength = Int(header[start + 4]) << 8 | Int(header[start + 5])
        let total = FastCGI.headerLength + contentLength + Int(header[start + 6])
        guard buffer.count - start >= total else { return nil }
        let contentStart = start + FastCGI.headerLength
        let record = FastCGI.Record(
            type: header[start + 1], requestID: UInt16(header[start + 2]) << 8 | UInt16(header[start + 3]),
            content: Array(buffer[contentStart..<contentStart + contentLength]))
        start += total
        return record
    }

    /// True when no part of a record waits for the rest.
    package var isEmpty: Bool { start == buffer.count }
}

/// A request as its records brought it: the params and the body.
package struct FastCGIRequest: Sendable {
    package let requestID: UInt16
    /// The server keeps the connection for the next request.
    package let keepConnection: Bool
    package let params: [(name: String, value: String)]
    /// The body's first bytes, up to the route's limit.
    package let body: [UInt8]
    /// How many bytes STDIN brought in all (more than `body` holds when
    /// over the limit).
    package let bodyLength: Int
}

/// One connection's side of the protocol: records in, what to do out.
/// One request at a time; a second BEGIN_REQUEST while one is in progress
/// is refused (CANT_MPX_CONN), as nginx never sends one.
package struct FastCGIConnectionState: Sendable {
    /// What a record asks of the program.
    package enum Step: Sendable {
        /// Nothing yet.
        case none
        /// A request began: its time limit starts.
        case began
        /// Send these bytes (a management answer, a refusal).
        case reply([UInt8])
        /// The server gave the request up before it was whole: send these
        /// bytes (its END_REQUEST); it is not answered.
        case aborted([UInt8])
        /// The request is whole: answer it.
        case request(FastCGIRequest)
    }

    private let bodyLimit: Int
    private var current: UInt16?
    private var keepConnection = false
    private var params: [UInt8] = []
    private var paramsDone = false
    private var body: [UInt8] = []
    private var bodyLength = 0

    package init(bodyLimit: Int) {
        self.bodyLimit = bodyLimit
    }

    /// True between requests.
    package var isIdle: Bool { current == nil }

    /// Takes one record.
    package mutating func take(_ record: FastCGI.Record) throws(FastCGIError) -> Step {
        guard let type = FastCGI.RecordType(rawValue: record.type) else { return unknownType(record.type) }
        if record.requestID == 0 {
            return type == .getValues ? .reply(values(record.content)) : unknownType(record.type)
        }
        switch type {
        case .beginRequest: return try begin(record)
        case .abortRequest:
            guard record.requestID == current else { return .none }
            reset()
            var out: [UInt8] = []
            FastCGI.appendEnd(record.requestID, status: .requestComplete, appStatus: 1, to: &out)
            return .aborted(out)
        case .params:
            guard record.requestID == current, !paramsDone else { return .none }
            if record.content.isEmpty {
                paramsDone = true
                return .none
            }
            guard params.count + record.content.count <= FastCGI.paramsLimit else { throw .paramsTooLarge }
            params += record.content
            return .none
        case .stdin:
            guard let id = record.requestID == current ? current : nil else { return .none }
            guard paramsDone else { throw .stdinBeforeParams }
            if !record.content.isEmpty {
                let room = max(0, bodyLimit + 1 - body.count)
                body += record.content.prefix(room)
                bodyLength += record.content.count
                return .none
            }
            let request = FastCGIRequest(
                requestID: id, keepConnection: keepConnection, params: try FastCGI.pairs(params), body: body,
                bodyLength: bodyLength)
            reset()
            return .request(request)
        case .data, .endRequest, .stdout, .stderr, .getValues, .getValuesResult, .unknownType:
            // A web server's records only; a responder reads no DATA stream.
            return .none
        }
    }

    private mutating func begin(_ record: FastCGI.Record) throws(FastCGIError) -> Step {
        guard record.content.count >= 8 else { throw .malformedBeginRequest }
        var out: [UInt8] = []
        if current != nil {
            FastCGI.appendEnd(record.requestID, status: .cannotMultiplex, to: &out)
            return .reply(out)
        }
        let role = UInt16(record.content[0]) << 8 | UInt16(record.content[1])
        guard role == FastCGI.responderRole else {
            FastCGI.appendEnd(record.requestID, status: .unknownRole, to: &out)
            return .reply(out)
        }
        reset()
        current = record.requestID
        keepConnection = record.content[2] & FastCGI.keepConnectionFlag != 0
        return .began
    }

    private mutating func reset() {
        current = nil
        params = []
        paramsDone = false
        body = []
        bodyLength = 0
    }

    private func unknownType(_ type: UInt8) -> Step {
        var out: [UInt8] = []
        FastCGI.append(.unknownType, 0, [type, 0, 0, 0, 0, 0, 0, 0][...], to: &out)
        return .reply(out)
    }

    /// GET_VALUES_RESULT: one connection, one request on it, no multiplexing.
    private func values(_ content: [UInt8]) -> [UInt8] {
        var pairs: [UInt8] = []
        for pair in (try? FastCGI.pairs(content)) ?? [] {
            let value: String
            switch pair.name {
            case "FCGI_MAX_CONNS", "FCGI_MAX_REQS": value = "1"
            case "FCGI_MPXS_CONNS": value = "0"
            default: continue
            }
            FastCGI.appendPair(Array(pair.name.utf8), Array(value.utf8), to: &pairs)
        }
        var out: [UInt8] = []
        FastCGI.append(.getValuesResult, 0, pairs[...], to: &out)
        return out
    }
}
