import MockCloudSystem

/// Files that hold secrets or their hashes: readable by the owner alone.
package enum PrivateFile {
    /// Which private file, in the words the error messages use.
    package enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// `MOCKCLOUD_HMAC_KEYS`.
        case hmacKeys
        /// `MOCKCLOUD_TOKENS`.
        case tokens

        package var description: String {
            switch self {
            case .hmacKeys: return "HMAC key file"
            case .tokens: return "token file"
            }
        }
    }

    /// Reads a file whose mode must not let group or others read it.
    package static func read(_ path: String, _ file: Kind) throws -> [UInt8] {
        do {
            return try OwnerOnlyFile.read(path, limit: 1 << 20)
        } catch let error as OwnerOnlyFile.TooOpen {
            throw KeyFileError.tooOpen(path: path, mode: error.mode, file: file)
        } catch let error as SystemError {
            throw KeyFileError.unreadable(path: path, reason: error.errno.description, file: file)
        }
    }

    /// Calls `body` with each meaningful line's 1-based number and range in
    /// `text`: trimmed, without blank lines and `#` comments.
    package static func forEachLine(_ text: [UInt8], _ body: (Int, Range<Int>) throws -> Void) rethrows {
        var lines = ByteLines(text)
        while var line = lines.next() {
            while let last = line.last, text[last] == 0x0D || text[last] == 0x20 || text[last] == 0x09 {
                line = line.lowerBound..<last
            }
            while let first = line.first, text[first] == 0x20 || text[first] == 0x09 {
                line = (first + 1)..<line.upperBound
            }
            if line.isEmpty || text[line.lowerBound] == UInt8(ascii: "#") { continue }
            try body(lines.number, line)
        }
    }
}
