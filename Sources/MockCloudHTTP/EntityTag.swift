import MockCloudSystem

/// Strong entity tags and the RFC 7232 conditions on them.
package enum EntityTag {
    /// The strong tag of stored bytes: `"<16 hex digits>"` (FNV-1a, 64 bits,
    /// over the exact bytes on disk, so it changes whenever the file does).
    package static func of(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        var tag: [UInt8] = []
        tag.reserveCapacity(18)
        tag.append(UInt8(ascii: "\""))
        ASCII.appendHex(hash, digits: 16, to: &tag)
        tag.append(UInt8(ascii: "\""))
        return String(decoding: tag, as: UTF8.self)
    }

    /// One member of an `If-Match` / `If-None-Match` list.
    struct Listed: Equatable {
        var opaque: String
        var weak: Bool
    }

    /// The tags of a header list; `nil` for `*`. Members that are not tags are
    /// kept as bare opaque values so that an unquoted tag still compares.
    static func parseList(_ header: String) -> [Listed]? {
        var tags: [Listed] = []
        for part in header.split(separator: ",") {
            var item = Substring(part.trimmingSpaces())
            if item == "*" { return nil }
            var weak = false
            if item.hasPrefix("W/") {
                weak = true
                item = item.dropFirst(2)
            }
            if item.count >= 2, item.first == "\"", item.last == "\"" {
                tags.append(Listed(opaque: String(item), weak: weak))
            } else if !item.isEmpty {
                tags.append(Listed(opaque: "\"" + item + "\"", weak: weak))
            }
        }
        return tags
    }

    /// `If-Match` (strong comparison): true when the request may proceed.
    /// Any `If-Match` fails when nothing is stored.
    package static func ifMatchPasses(_ header: String?, current: String?) -> Bool {
        guard let header else { return true }
        guard let current else { return false }
        guard let tags = parseList(header) else { return true }
        return tags.contains { !$0.weak && $0.opaque == current }
    }

    /// `If-None-Match` (weak comparison): true when the request may proceed,
    /// i.e. no listed tag matches (`*` matches any stored document).
    package static func ifNoneMatchPasses(_ header: String?, current: String?) -> Bool {
        guard let header, let current else { return true }
        guard let tags = parseList(header) else { return false }
        return !tags.contains { $0.opaque == current }
    }
}
