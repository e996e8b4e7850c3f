import Foundation
import MockCloudClient
import MockCloudCommandLine
@testable import MockCloudSync
import MockCloudTestSupport
import MockCloudWire
import Testing

/// mockcloud-sync's command line and where its token comes from.
@Suite struct SyncCommandLineTests {
    static let box = ["--url", "https://127.0.0.1:8443", "--ca", "ca.crt", "--user-key", "u1"]

    func options(_ arguments: [String], environment: [String: String] = [:]) throws -> SyncOptions {
        guard case .run(let parsed) = try SyncOptions.tool.parse(arguments) else { throw UsageError("help") }
        return try SyncOptions(parsed, environment: { environment[$0] })
    }

    @Test func theToolsDescriptionIsConsistent() {
        #expect(SyncOptions.tool.problems.isEmpty)
    }

    @Test func everyCommandKeepsItsSpelling() throws {
        #expect(try options(["push", "scans/"] + Self.box + ["--delete"]).command == .push(directory: "scans/"))
        #expect(try options(["push", "scans/", "--delete"] + Self.box).deleteMissing)
        let watching = try options(["push", "scans/", "--watch", "--delete"] + Self.box)
        #expect(watching.command == .push(directory: "scans/") && watching.watch && watching.deleteMissing && !watching.follow)
        #expect(try !options(["push", "scans/"] + Self.box).watch)
        #expect(try options(["pull", "inbox/", "--follow"] + Self.box).follow)
        #expect(try options(["pull", "inbox/", "--exclude-own"] + Self.box + ["--device-id", "mirror-1"]).excludeOwn)
        #expect(try options(["settings", "get"] + Self.box + ["--json"]).json)
        let put = try options(["settings", "put", "s.json", "--if-match", "\"abc\""] + Self.box + ["--ca-sha256", "AB:CD"])
        #expect(put.command == .settingsPut(file: "s.json") && put.ifMatch == "\"abc\"" && put.caSHA256 == "AB:CD")
        #expect(try options(["settings", "patch", "p.json"] + Self.box).command == .settingsPatch(file: "p.json"))
        let all = try options(["pull", "d", "--url=https://box:8443", "--ca=c", "--user-key=u1", "--device-id=m-1"])
        #expect(all.url.absoluteString == "https://box:8443" && all.caFile == "c" && all.deviceID == DeviceID("m-1") && all.token == nil)
    }

    @Test(arguments: [
        (["push", ""], "DIR is empty (an unset variable?): mockcloud-sync push DIR [--delete] [--watch]"),
        (["push"], "push needs DIR"),
        (["push", "a", "b"], "unexpected argument b: mockcloud-sync push DIR [--delete] [--watch]"),
        (["pull", "d", "--delete"], "--delete is not an option of pull"),
        (["pull", "d", "--watch"], "--watch is not an option of pull"),
        (["push", "d", "--follow"], "--follow is not an option of push"),
        (["push", "d", "--watch", "--watch"], "--watch is given twice"),
        (["settings"], "settings needs one of: get, put, patch, merge"),
        (["settings", "put"], "settings put needs FILE"),
        (["push", "d", "--device-id", ""], "--device-id is empty (an unset variable?): --device-id ID"),
        (["push", "d", "--device-id", "a b"], "--device-id must match ^[A-Za-z0-9_-]{1,128}$"),
        (["push", "d", "--json", "--json"], "--json is given twice"),
        (["push", "d", "--url", "https://other"], "--url is given twice"),
        (["push", "d", "--token", "mct_x"], "--token would show the token in ps and in shell history: put it in a file "
            + "only you can read and pass --token-file FILE, or set MOCKCLOUD_SYNC_TOKEN"),
        (["push", "d", "--token-file"], "--token-file needs a value: --token-file FILE"),
        (["push", "d", "--frob"], "unknown option --frob"),
    ])
    func aWrongCommandLineIsASentence(arguments: [String], sentence: String) {
        #expect(throws: UsageError(sentence)) { try options(arguments + Self.box) }
    }

    @Test func valuesOfTheWrongShapeAreSentences() {
        #expect(throws: UsageError("--url must be https://BOX:PORT (HTTPS only)")) {
            try options(["push", "d", "--url", "http://box", "--ca", "c", "--user-key", "u1"])
        }
        #expect(throws: UsageError("--user-key must match ^[A-Za-z0-9_-]{1,128}$")) {
            try options(["push", "d", "--url", "https://box", "--ca", "c", "--user-key", "a/b"])
        }
    }

    @Test func requiredOptionsSayWhatTheyAre() {
        #expect(throws: UsageError("--url https://BOX:8443 is required: the box (HTTPS only)")) { try options(["push", "d"]) }
        #expect(throws: UsageError("--user-key KEY is required: the X-User-Key, ^[A-Za-z0-9_-]{1,128}$")) {
            try options(["push", "d", "--url", "https://b", "--ca", "c"])
        }
    }

    @Test func theUsageShowsWatchAsPushsOption() {
        #expect(SyncOptions.usage.contains("mockcloud-sync push DIR [--delete] [--watch]"))
        #expect(SyncOptions.usage.contains("--watch") && SyncOptions.usage.contains("until interrupted"))
    }

    @Test func aWrongCommandLineExits2AndHelpExits0() async {
        for arguments in [["push", ""], [], [""], ["push", "--url"], ["-x"], ["--", "push"]] {
            #expect(await SyncCommand.main(arguments, environment: { _ in nil }) == 2)
        }
        #expect(await SyncCommand.main(["--help"], environment: { _ in nil }) == 0)
        #expect(await SyncCommand.main(["push", "d", "-h"], environment: { _ in nil }) == 0)
    }

    @Test func theTokenComesFromTheFileElseTheEnvironment() throws {
        let variable = ["MOCKCLOUD_SYNC_TOKEN": "mct_fromEnv"]
        #expect(try options(["push", "d"] + Self.box, environment: variable).token == .environment("mct_fromEnv"))
        #expect(try options(["push", "d", "--token-file", "t"] + Self.box, environment: variable).token == .file("t"))
        #expect(try options(["push", "d"] + Self.box).token == nil)
        #expect(throws: UsageError("MOCKCLOUD_SYNC_TOKEN must hold one token: printable characters, no spaces "
            + "(it is set but empty: unset it for a box without tokens)")) {
            try options(["push", "d"] + Self.box, environment: ["MOCKCLOUD_SYNC_TOKEN": ""])
        }
        #expect(throws: UsageError("MOCKCLOUD_SYNC_TOKEN must hold one token: printable characters, no spaces")) {
            try options(["push", "d"] + Self.box, environment: ["MOCKCLOUD_SYNC_TOKEN": "mct_a\r\nX-Evil: 1"])
        }
    }

    @Test(arguments: ["mct_abc", "mct_abc\n", "mct_abc\r\n"])
    func aTokenFileReadableByItsOwnerAloneIsRead(text: String) throws {
        let directory = try TemporaryDirectory()
        let path = try write(text, to: directory.path + "/box.token", mode: 0o600)
        #expect(try SyncOptions.TokenSource.file(path).read() == "mct_abc")
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660])
    func aTokenFileOthersCanReadIsRefusedWithTheChmodToRun(mode: Int) throws {
        let directory = try TemporaryDirectory()
        let path = try write("mct_abc\n", to: directory.path + "/box.token", mode: mode)
        let octal = "0" + String(mode, radix: 8)
        #expect(throws: ClientError.local("token file \(path) is readable by group or others (mode \(octal)); run chmod 600 \(path)")) {
            try SyncOptions.TokenSource.file(path).read()
        }
    }

    @Test(arguments: ["", "\n", "mct_a\nmct_b\n", "mct a", "\u{7F}", String(repeating: "t", count: 4097)])
    func aTokenFileThatIsNotOneTokenIsRefused(text: String) throws {
        let directory = try TemporaryDirectory()
        let path = try write(text, to: directory.path + "/box.token", mode: 0o600)
        #expect(throws: ClientError.local("token file \(path) must hold one token on one line, as mockcloud-admin token prints it")) {
            try SyncOptions.TokenSource.file(path).read()
        }
    }

    @Test func aMissingTokenFileIsNamed() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: ClientError.local("token file \(directory.path)/none cannot be read: No such file or directory")) {
            try SyncOptions.TokenSource.file(directory.path + "/none").read()
        }
    }

    private func write(_ text: String, to path: String, mode: Int) throws -> String {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }
}
