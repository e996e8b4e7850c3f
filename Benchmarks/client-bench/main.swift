import Glibc
import MockCloudClient
import MockCloudSystem
import MockCloudWire

// The library alone, for Benchmarks/lan/bench_client.py: no folder, no
// state files, no process start in the figure.
//   client-bench push URL CA KEY SAMPLES       a line per sample: ID VERSION BODY-JSON
//   client-bench pull URL CA KEY
// Prints {"seconds": …, "items": …} (the timed part only).
let arguments = CommandLine.arguments
guard arguments.count >= 5, let key = UserKey(arguments[4]) else {
    try? Sys.writeAll(.standardError, Array("usage: client-bench push|pull URL CA KEY [SAMPLES]\n".utf8))
    exit(2)
}
do {
    let client = MockCloudClient(
        configuration: ClientConfiguration(userKey: key, deviceID: DeviceID("bench-1")),
        transport: try CurlTransport(baseURL: arguments[2], trust: try TrustAnchor(caFile: arguments[3])))
    let clock = ContinuousClock()
    var count = 0
    let elapsed: Duration
    if arguments[1] == "push", arguments.count == 6 {
        guard let lines = try Sys.readFile(arguments[5]) else { throw ClientError.local("no \(arguments[5])") }
        var items: [UploadItem] = []
        for line in lines.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count == 3, let id = MessageID(String(decoding: fields[0], as: UTF8.self)),
                let version = Int64(String(decoding: fields[1], as: UTF8.self))
            else { throw ClientError.local("a sample line without ID VERSION BODY") }
            items.append(.put(id, version: version, body: try JSONText(validating: Array(fields[2]))))
        }
        let start = clock.now
        let outcomes = try await client.upload(items)
        elapsed = clock.now - start
        count = outcomes.filter(\.isDone).count
    } else {
        let start = clock.now
        for try await page in client.changes(since: nil) { count += page.messages.count }
        elapsed = clock.now - start
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    try Sys.writeAll(.standardOutput, Array("{\"seconds\": \(seconds), \"items\": \(count)}\n".utf8))
} catch {
    try? Sys.writeAll(.standardError, Array("client-bench: \(error)\n".utf8))
    exit(1)
}
