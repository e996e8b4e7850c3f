import Glibc
import MockCloudHTTP

/// The web server's side of FastCGI, as nginx speaks it, for the tests of
/// the FastCGI mode: a request's records, and the answers read back.
package enum FastCGITestClient {
    /// BEGIN_REQUEST (responder), the PARAMS in order, their end, the body
    /// as STDIN (in pieces of `piece` bytes), its end.
    package static func request(
        id: UInt16 = 1, keepConnection: Bool = false, params: [(String, String)], body: [UInt8] = [], piece: Int = 65528
    ) -> [UInt8] {
        var out: [UInt8] = []
        FastCGI.append(.beginRequest, id, [0, 1, keepConnection ? 1 : 0, 0, 0, 0, 0, 0][...], to: &out)
        var pairs: [UInt8] = []
        for (name, value) in params { FastCGI.appendPair(Array(name.utf8), Array(value.utf8), to: &pairs) }
        FastCGI.appendStream(.params, id, pairs, to: &out)
        FastCGI.append(.params, id, [], to: &out)
        var start = 0
        while start < body.count {
            let end = min(body.count, start + piece)
            FastCGI.append(.stdin, id, body[start..<end], to: &out)
            start = end
        }
        FastCGI.append(.stdin, id, [], to: &out)
        return out
    }

    /// A request as `cgiVariables` describes it.
    package static func request(
        id: UInt16 = 1, keepConnection: Bool = false, method: String, path: String, query: String = "",
        headers: [String: String] = [:], body: [UInt8] = [], extra: [String: String] = [:]
    ) -> [UInt8] {
        let variables = cgiVariables(method: method, path: path, query: query, headers: headers,
                                     body: body.isEmpty ? nil : body, extra: extra)
        return request(id: id, keepConnection: keepConnection, params: variables.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                       body: body)
    }

    /// What came back for one request id.
    package struct Answer {
        package var stdout: [UInt8] = []
        package var stderr: [UInt8] = []
        /// END_REQUEST's application and protocol status; `nil` before it.
        package var end: (appStatus: UInt32, protocolStatus: UInt8)? {
            endBytes.map { (UInt32($0[0]) << 24 | UInt32($0[1]) << 16 | UInt32($0[2]) << 8 | UInt32($0[3]), $0[4]) }
        }
        package var endBytes: [UInt8]?
        /// STDOUT records seen (the last, empty, one included).
        package var stdoutRecords = 0

        package var text: String { String(decoding: stdout, as: UTF8.self) }
        package var log: String { String(decoding: stderr, as: UTF8.self) }
        /// The `Status:` line's code.
        package var status: Int? {
            guard text.hasPrefix("Status: ") else { return nil }
            return Int(text.dropFirst(8).prefix(3))
        }
        /// The body after the headers.
        package var body: String {
            let bytes = stdout
            guard let end = bytes.indices.first(where: { Array(bytes[$0..<min($0 + 4, bytes.count)]) == [13, 10, 13, 10] })
            else { return "" }
            return String(decoding: bytes[(end + 4)...], as: UTF8.self)
        }
    }

    /// The records in `bytes`, as answers by request id, and the records
    /// of other types (GET_VALUES_RESULT, UNKNOWN_TYPE) in order.
    package static func answers(_ bytes: [UInt8]) throws -> (byID: [UInt16: Answer], others: [FastCGI.Record]) {
        var reader = FastCGIRecordReader()
        reader.append(bytes)
        var byID: [UInt16: Answer] = [:]
        var others: [FastCGI.Record] = []
        while let record = try reader.next() {
            switch FastCGI.RecordType(rawValue: record.type) {
            case .stdout:
                byID[record.requestID, default: Answer()].stdout += record.content
                byID[record.requestID, default: Answer()].stdoutRecords += 1
            case .stderr: byID[record.requestID, default: Answer()].stderr += record.content
            case .endRequest: byID[record.requestID, default: Answer()].endBytes = record.content
            default: others.append(record)
            }
        }
        return (byID, others)
    }

    /// A connected Unix socket pair: the server's end and the client's.
    package static func socketPair() -> (server: Int32, client: Int32) {
        var fds: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// A connection to the socket at `path`.
    package static func connect(_ path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if result != 0 {
            close(fd)
            return nil
        }
        return fd
    }

    /// Writes every byte.
    package static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            precondition(n > 0, "write: errno \(errno)")
            offset += n
        }
    }

    /// Reads until the other end closes, or until `requests` END_REQUEST
    /// records have come.
    package static func receive(_ fd: Int32, requests: Int = Int.max) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { return out }
            out += buffer[..<n]
            if requests != Int.max, try answers(out).byID.values.filter({ $0.endBytes != nil }).count >= requests { return out }
        }
    }
}
