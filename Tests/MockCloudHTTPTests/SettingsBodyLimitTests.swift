import MockCloudConfig
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// The settings route behind `respond`, as `main.swift` wires it: the 1 MiB
/// limit itself is accepted, one byte more is 413.
@Suite struct SettingsBodyLimitTests {
    let data: TemporaryDirectory

    init() throws { data = try TemporaryDirectory() }

    func put(_ body: [UInt8]) throws -> (response: CGIResponse, unread: [UInt8]) {
        let environment: Environment = [
            "REQUEST_METHOD": "PUT", "DOCUMENT_URI": "/user/settings", "CONTENT_LENGTH": String(body.count),
            "HTTP_X_USER_KEY": "u1", "MOCKCLOUD_DATA": data.path,
        ]
        let (response, unread) = try withStdin(body) { fd in
            CGIProgram.respond(environment: environment, bodyLimit: SettingsRoute.bodyLimit, stdin: fd, name: "t") {
                try SettingsRoute(dataRoot: ServiceConfig.dataRoot($0.environment), clock: { 0 }).respond(to: $0)
            }
        }
        return (response, unread)
    }

    /// `{"pad": "aaa…"}` of exactly `size` bytes.
    static func document(ofSize size: Int) -> [UInt8] {
        Array(#"{"pad": ""#.utf8) + [UInt8](repeating: 0x61, count: size - 11) + Array(#""}"#.utf8)
    }

    @Test func aSettingsBodyOfExactly1MiBIsStored() throws {
        let body = Self.document(ofSize: SettingsRoute.bodyLimit)
        #expect(body.count == 1_048_576)
        let (response, unread) = try put(body)
        #expect(response.status == 200)
        #expect(unread == [])
        #expect(data.text(of: "user_settings/u1.json")?.hasSuffix("\n  \"serverReceivedAt\": \"19700101T000000.000000Z\"\n}") == true)
    }

    @Test func aSettingsBodyOneByteOver1MiBIs413AndNothingIsStored() throws {
        let (response, unread) = try put(Self.document(ofSize: SettingsRoute.bodyLimit + 1))
        #expect(response.status == 413)
        #expect(response.text == #"{"error": "request body larger than this route's limit of 1048576 bytes"}"#)
        #expect(unread == [])
        #expect(data.entries() == [])
    }
}
