import MockCloudClient
import MockCloudSystem
import MockCloudWire

/// The folder a command works in: its `*.json` files and the tool's own
/// state files, which start with a dot (so are never taken for messages).
struct Folder {
    let path: String

    /// The names of the messages in the folder: `<id>.json`, hidden files
    /// (starting with `.`) left out, sorted.
    func jsonFiles() throws(ClientError) -> [String] {
        let all: [String]
        do {
            all = try Sys.names(in: path)
        } catch let error as SystemError {
            throw .local("cannot read the folder \(path): \(error.errno)")
        } catch {
            throw .local("cannot read the folder \(path): \(error)")
        }
        return all.filter(Self.isMessage).sorted()
    }

    /// True for a message's file name, `<id>.json`: not hidden, so never a
    /// state file of the tool's, an editor's `.name.swp` or a scanner's
    /// `.name.part`; nor `name.json.tmp`, a file on its way in.
    @Sendable static func isMessage(_ name: String) -> Bool {
        !name.hasPrefix(".") && name.hasSuffix(".json") && name.utf8.count > 5
    }

    func read(_ name: String) throws(ClientError) -> [UInt8] {
        guard let bytes = try readIfPresent(name) else { throw .local("\(path)/\(name) vanished") }
        return bytes
    }

    /// The file's bytes, or nil when it is not there (removed since it was listed).
    func readIfPresent(_ name: String) throws(ClientError) -> [UInt8]? {
        do {
            return try AtomicFile.read(name, in: path)
        } catch {
            throw .local("cannot read \(path)/\(name): \(ClientError.describe(error))")
        }
    }

    /// A state file of lines `<id> <field> <field>`; empty when absent.
    func readState(_ name: String) throws(ClientError) -> [MessageID: [String]] {
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(name, in: path)
        } catch {
            throw .local("cannot read \(path)/\(name): \(ClientError.describe(error))")
        }
        var state: [MessageID: [String]] = [:]
        for line in String(decoding: bytes ?? [], as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard let first = fields.first, let id = MessageID(first) else {
                throw .local("\(path)/\(name) is damaged (a line without an id): delete it to start afresh")
            }
            state[id] = Array(fields.dropFirst())
        }
        return state
    }

    /// Replaces a state file atomically (temporary file, fsync, rename).
    func writeState(_ name: String, _ state: [MessageID: [String]]) throws(ClientError) {
        var text = ""
        for id in state.keys.sorted() {
            text += id.rawValue
            for field in state[id]! { text += " " + field }
            text += "\n"
        }
        do {
            try AtomicFile.write(Array(text.utf8), to: name, in: path)
        } catch {
            throw .local("cannot write \(path)/\(name): \(ClientError.describe(error))")
        }
    }
}

/// An exclusive `flock` on a folder itself (no lock file), held while the
/// object lives and dropped by the kernel when the process ends, a kill
/// included: one push per folder, so that two never write one ack log.
final class FolderLock {
    private let fd: FileDescriptor

    /// Takes the lock without waiting; throws `FolderBusy` when another
    /// process holds it.
    init(_ path: String) throws {
        do {
            fd = try Sys.open(path, .readOnly | .directory)
        } catch let error as SystemError {
            throw ClientError.local("cannot read the folder \(path): \(error.errno)")
        }
        let taken: Bool
        do {
            taken = try Sys.tryLock(fd, path: path)
        } catch {
            Sys.close(fd)
            throw ClientError.local("cannot lock the folder \(path): \(error)")
        }
        guard taken else {
            Sys.close(fd)
            throw FolderBusy(path: path)
        }
    }

    deinit { Sys.close(fd) }
}

/// Another push holds the folder's lock (`FolderLock`): exit 8.
struct FolderBusy: Error, Equatable, CustomStringConvertible {
    let path: String

    var description: String {
        "another push is running on the folder \(path) (push --watch, or its service): one push per folder, this one stops"
    }
}
