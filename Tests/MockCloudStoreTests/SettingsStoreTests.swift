import Dispatch
import Glibc
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import MockCloudTestSupport
import MockCloudWire
import Testing

/// `<data>/user_settings/<key>.json` and the rules of a settings write,
/// without HTTP: conditions, last writer wins on `updatedAt`, the server's
/// stamp and the stored size limit, each under the key's lock.
@Suite struct SettingsStoreTests {
    let data: TemporaryDirectory
    let store: SettingsStore
    let key = UserKey("u1")!
    static let now: Timestamp.Micros = 1_779_000_000_000_000

    init() throws {
        data = try TemporaryDirectory()
        store = SettingsStore(root: data.path, minimumFreeBytes: 0, clock: { Self.now })
    }

    func object(_ text: String) throws -> JSONObject {
        try #require(try JSONParser.parse(Array(text.utf8)).objectValue)
    }

    @Test func filesLiveWherePythonPutsThem() {
        #expect(store.directory == data.path + "/user_settings")
        #expect(store.fileName(for: key) == "u1.json")
    }

    @Test func readIsNilWhenNothingIsStored() throws {
        #expect(try store.read(key) == nil)
    }

    @Test func replaceStoresThePythonLayoutStampedWithTheServersTime() throws {
        let stored = try store.replace(key, with: try object(#"{"heightCm": 180}"#), given: Preconditions())
        let text = try #require(data.text(of: "user_settings/u1.json"))
        #expect(text == "{\n  \"heightCm\": 180,\n  \"serverReceivedAt\": \"\(Timestamp.format(Self.now))\"\n}")
        #expect(stored.bytes == Array(text.utf8))
        #expect(stored.etag == EntityTag(of: Array(text.utf8)))
        #expect(data.mode(of: "user_settings/u1.json") == 0o600)
        #expect(data.entries(".locks") == ["user_settings.u1.lock"])
    }

    @Test func anOlderUpdatedAtIsRefusedWithWhatIsStored() throws {
        try store.replace(key, with: try object(#"{"updatedAt": "2026-05-18T04:43:04Z", "v": 2}"#), given: Preconditions())
        let before = data.text(of: "user_settings/u1.json")
        #expect {
            try store.replace(key, with: try object(#"{"updatedAt": "20260518T044303Z", "v": 1}"#), given: Preconditions())
        } throws: { error in
            guard case .olderThanStored(let incoming, let stored, let current)? = error as? SettingsError else { return false }
            return incoming == "20260518T044303Z" && stored == "2026-05-18T04:43:04Z"
                && current.document?.objectValue?["v"] == .number("2")
        }
        #expect(data.text(of: "user_settings/u1.json") == before)
        // The same instant, or a later one, wins; so does a document without one.
        try store.replace(key, with: try object(#"{"updatedAt": "20260518T044304Z", "v": 3}"#), given: Preconditions())
        try store.replace(key, with: try object(#"{"v": 4}"#), given: Preconditions())
        #expect(try store.read(key).map(StoredSettings.init(bytes:))?.document?.objectValue?["v"] == .number("4"))
    }

    @Test(arguments: [
        (Preconditions(ifMatch: .tags([EntityTag(quoted: "\"other\"")])), Preconditions.Failure.storedTagNotNamed),
        (Preconditions(ifNoneMatch: .any), .storedTagNamed),
    ])
    func aFailedConditionChangesNothingAndSaysWhy(_ conditions: Preconditions, _ failure: Preconditions.Failure) throws {
        let first = try store.replace(key, with: try object(#"{"v": 1}"#), given: Preconditions())
        #expect {
            try store.replace(key, with: try object(#"{"v": 2}"#), given: conditions)
        } throws: { error in
            guard case .preconditionFailed(let why, let current?)? = error as? SettingsError else { return false }
            return why == failure && current.etag == first.etag
        }
        #expect(try store.read(key) == first.bytes)
        // The stored tag named by If-Match, or by If-None-Match's absence, lets it through.
        let second = try store.replace(key, with: try object(#"{"v": 2}"#), given: Preconditions(ifMatch: .tags([first.etag])))
        #expect(second.etag != first.etag)
    }

    @Test func ifMatchOnNothingStoredFailsAndCreatesNothing() throws {
        #expect {
            try store.replace(key, with: JSONObject(), given: Preconditions(ifMatch: .any))
        } throws: { error in
            guard case .preconditionFailed(.nothingToMatch, nil)? = error as? SettingsError else { return false }
            return true
        }
        #expect(data.entries() == [])
    }

    @Test func mergeAppliesAMergePatchToTheStoredObject() throws {
        try store.replace(key, with: try object(#"{"a": 1, "b": {"c": 2, "d": 3}}"#), given: Preconditions())
        let merged = try store.merge(key, patch: try object(#"{"a": null, "b": {"c": 5}, "e": true}"#), given: Preconditions())
        #expect(merged.document?.objectValue?["a"] == nil)
        #expect(merged.document?.objectValue?["b"] == .object(try object(#"{"c": 5, "d": 3}"#)))
        #expect(merged.document?.objectValue?["e"] == .bool(true))
    }

    @Test func mergeNeedsAStoredObject() throws {
        #expect {
            try store.merge(key, patch: JSONObject(), given: Preconditions())
        } throws: { error in
            if case .nothingStored? = error as? SettingsError { return true }
            return false
        }
        #expect(data.entries() == [])
        try data.write("[1, 2]", to: "user_settings/u1.json")
        #expect {
            try store.merge(key, patch: JSONObject(), given: Preconditions())
        } throws: { error in
            if case .storedDocumentNotAnObject? = error as? SettingsError { return true }
            return false
        }
    }

    @Test func removeTakesTheFileAndItsLockFile() throws {
        try store.replace(key, with: JSONObject(), given: Preconditions())
        try store.remove(key, given: Preconditions())
        #expect(data.entries("user_settings") == [])
        #expect(data.entries(".locks") == [])
        #expect {
            try store.remove(key, given: Preconditions())
        } throws: { error in
            if case .nothingStored? = error as? SettingsError { return true }
            return false
        }
    }

    @Test func aStoredFormOverTheLimitIsRefused() throws {
        // 110,000 numbers 40 arrays deep: under 1 MiB as sent, but each one
        // gets a line of its own with 82 spaces of indent in Python's layout.
        var value = JSONValue.array(Array(repeating: .number("0"), count: 110_000))
        for _ in 0..<40 { value = .array([value]) }
        var document = JSONObject()
        document["deep"] = value
        #expect {
            try store.replace(key, with: document, given: Preconditions())
        } throws: { error in
            guard case .storedFormTooLarge(let size, let limit)? = error as? SettingsError else { return false }
            return size > limit && limit == SettingsStore.storedSizeLimit
        }
        #expect(data.entries() == [])
    }

    @Test func concurrentConditionalWritesOfOneKeyLoseNothing() throws {
        // Read, add one, write if still the same (If-Match), from four
        // threads: 100 increments in all, whatever the interleaving.
        let root = data.path
        try store.replace(key, with: try object(#"{"count": 0}"#), given: Preconditions())
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let store = SettingsStore(root: root, minimumFreeBytes: 0)
            let key = UserKey("u1")!
            var done = 0
            while done < 25 {
                do {
                    let current = StoredSettings(bytes: try store.read(key) ?? [])
                    guard case .number(let text)? = current.document?.objectValue?["count"], let count = Int(text) else {
                        Issue.record("no count stored")
                        return
                    }
                    var next = JSONObject()
                    next["count"] = .number(String(count + 1))
                    _ = try store.replace(key, with: next, given: Preconditions(ifMatch: .tags([current.etag])))
                    done += 1
                } catch SettingsError.preconditionFailed {
                    continue  // another thread wrote first: read again
                } catch {
                    Issue.record("replace failed: \(error)")
                    return
                }
            }
        }
        #expect(try store.read(key).map(StoredSettings.init(bytes:))?.document?.objectValue?["count"] == .number("100"))
        #expect(data.entries("user_settings") == ["u1.json"])
    }
}
