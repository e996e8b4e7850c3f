@testable import MockCloudHTTP

// FastCGI records as a web server sends them to a worker (nginx, or anyone
// who reaches the socket), through `FastCGIRecordReader` and
// `FastCGIConnectionState`.
//
// Input: the first byte sets the size of the pieces the rest arrives in (1
// to 256 bytes, as reads from a socket cut it); the rest is the stream.
// Oracles: no crash; the stream cut in pieces gives exactly the steps (or
// the error) it gives whole; every reply is well-formed records of version 1;
// a request's body holds at most the limit + 1 bytes and no more than STDIN
// brought; its params print and read back the same; an answer written for
// any request id reads back as the same bytes, ended once.

private let bodyLimit = 64

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFastCGI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    guard let first = bytes.first else { return 0 }
    let stream = Array(bytes.dropFirst())
    let whole = run(stream, piece: stream.count + 1)
    let cut = run(stream, piece: Int(first) + 1)
    require(whole == cut, "cut in pieces of \(Int(first) + 1): \(cut), whole: \(whole)")
    return 0
}

/// The steps (or the error) the stream makes, as text.
private func run(_ stream: [UInt8], piece: Int) -> [String] {
    var reader = FastCGIRecordReader()
    var state = FastCGIConnectionState(bodyLimit: bodyLimit)
    var steps: [String] = []
    var start = 0
    do {
        while start < stream.count {
            let end = min(stream.count, start + piece)
            reader.append(Array(stream[start..<end]))
            start = end
            while let record = try reader.next() { steps.append(check(try state.take(record))) }
        }
    } catch {
        steps.append("error \(error)")
    }
    return steps
}

private func check(_ step: FastCGIConnectionState.Step) -> String {
    switch step {
    case .none: return "none"
    case .began: return "began"
    case .reply(let bytes): return "reply \(records(bytes))"
    case .aborted(let bytes): return "aborted \(records(bytes))"
    case .request(let request):
        require(request.body.count <= bodyLimit + 1, "a body of \(request.body.count) bytes kept, over the limit + 1")
        require(request.bodyLength >= request.body.count, "bodyLength \(request.bodyLength) < \(request.body.count) kept")
        var printed: [UInt8] = []
        for pair in request.params { FastCGI.appendPair(Array(pair.name.utf8), Array(pair.value.utf8), to: &printed) }
        let again = (try? FastCGI.pairs(printed)) ?? []
        require(again.map(\.name) == request.params.map(\.name) && again.map(\.value) == request.params.map(\.value),
                "params do not read back as printed")
        let output = Array(request.body.prefix(40)) + Array(repeating: 0x41, count: request.params.count * 1000)
        let answer = FastCGI.answer(request.requestID, output)
        var reader = FastCGIRecordReader()
        reader.append(answer)
        var out: [UInt8] = []
        var ends = 0
        while let record = try? reader.next() {
            require(record.requestID == request.requestID, "an answer record for another request id")
            if record.type == FastCGI.RecordType.stdout.rawValue { out += record.content }
            if record.type == FastCGI.RecordType.endRequest.rawValue { ends += 1 }
        }
        require(reader.isEmpty && out == output && ends == 1, "the answer does not read back")
        return "request \(request.requestID) keep \(request.keepConnection) params \(request.params.count) "
            + "body \(request.body) length \(request.bodyLength)"
    }
}

/// The records of a reply, checked whole and of version 1.
private func records(_ bytes: [UInt8]) -> String {
    var reader = FastCGIRecordReader()
    reader.append(bytes)
    var types: [UInt8] = []
    do {
        while let record = try reader.next() { types.append(record.type) }
    } catch {
        require(false, "a reply that does not read: \(error)")
    }
    require(reader.isEmpty && !types.isEmpty, "a reply with a partial record, or none")
    return "\(types) \(bytes)"
}
