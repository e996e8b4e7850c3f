import Foundation
import Glibc
import MockCloudHTTP
import MockCloudHTTPTestSupport
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// Strong tags over the stored bytes, and the RFC 7232 list rules: the
/// header as the request parses it, the condition as the store checks it.
@Suite struct EntityTagTests {
    static func conditions(_ name: String, _ header: String?) -> Preconditions {
        let request = CGIRequest(method: "PUT", path: "/user/settings", headers: header.map { [name: $0] } ?? [:])
        return request.preconditions
    }

    @Test(arguments: [("", "\"cbf29ce484222325\""), ("a", "\"af63dc4c8601ec8c\""), ("foobar", "\"85944171f73967e8\"")])
    func theTagIsFNV1a64OfTheBytesIn16QuotedHexDigits(_ text: String, _ tag: String) {
        #expect(EntityTag(of: Array(text.utf8)).text == tag)
    }

    @Test(arguments: [
        (nil, "\"a\"", true), ("\"a\"", "\"a\"", true), ("\"b\", \"a\"", "\"a\"", true), ("*", "\"a\"", true),
        ("a", "\"a\"", true), ("\"b\"", "\"a\"", false), ("", "\"a\"", false),
        ("\"a\"", nil, false), ("*", nil, false), (nil, nil, true), ("W/\"a\"", nil, false),
        // nginx weakens the tag of every answer it gzips: the weak form of the
        // current tag passes, the weak form of another does not.
        ("W/\"a\"", "\"a\"", true), ("W/\"b\"", "\"a\"", false), ("W/\"b\", W/\"a\"", "\"a\"", true),
    ] as [(String?, String?, Bool)])
    func ifMatchPassesTheCurrentTagStrongOrAsNginxWeakensItAndFailsWhenNothingIsStored(_ header: String?, _ current: String?, _ passes: Bool) {
        #expect((Self.conditions("If-Match", header).failure(current: current.map(EntityTag.init(quoted:))) == nil) == passes)
    }

    @Test(arguments: [
        (nil, "\"a\"", true), ("\"a\"", "\"a\"", false), ("W/\"a\"", "\"a\"", false), ("\"b\",\"a\"", "\"a\"", false),
        ("*", "\"a\"", false), ("\"b\"", "\"a\"", true), ("\"b\", W/\"c\"", "\"a\"", true), ("*", nil, true),
        ("\"a\"", nil, true),
    ] as [(String?, String?, Bool)])
    func ifNoneMatchUsesWeakComparison(_ header: String?, _ current: String?, _ passes: Bool) {
        #expect((Self.conditions("If-None-Match", header).failure(current: current.map(EntityTag.init(quoted:))) == nil) == passes)
    }

    @Test func entityTagsAreSixteenZeroPaddedHexDigits() {
        var sawLeadingZero = false
        for n in 0..<2000 {
            let bytes = Array("{\"n\": \(n)}".utf8)
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            let digits = String(hash, radix: 16)
            sawLeadingZero = sawLeadingZero || digits.count < 16
            let expected = "\"" + String(repeating: "0", count: 16 - digits.count) + digits + "\""
            #expect(EntityTag(of: bytes).text == expected)
        }
        #expect(sawLeadingZero)
        #expect(EntityTag(of: []).text == "\"cbf29ce484222325\"")
    }
}
