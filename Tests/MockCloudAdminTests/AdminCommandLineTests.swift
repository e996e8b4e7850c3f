import MockCloudAdmin
import Testing

/// mockcloud-admin's command line: what each spelling runs, and the
/// sentence each wrong one gets (before the usage, exit 2).
@Suite struct AdminCommandLineTests {
    @Test func theToolsDescriptionIsConsistent() {
        #expect(AdminCommand.tool.problems.isEmpty)
    }

    @Test(arguments: [
        ([String](), "no command"),
        ([""], "unknown command \"\""),
        (["frobnicate"], "unknown command frobnicate"),
        (["verify"], "verify needs DATA_DIR"),
        (["verify", ""], "DATA_DIR is empty (an unset variable?): mockcloud-admin verify DATA_DIR [--keys FILE] [--require]"),
        (["verify", "d", "e"], "unexpected argument e: mockcloud-admin verify DATA_DIR [--keys FILE] [--require]"),
        (["verify", "d", "--keys"], "--keys needs a value"),
        (["verify", "d", "--keys="], "--keys is empty (an unset variable?)"),
        (["verify", "d", "--keys", "k", "--keys", "k"], "--keys is given twice"),
        (["verify", "d", "--require", "--require"], "--require is given twice"),
        (["verify", "d", "--require=yes"], "--require takes no value"),
        (["verify", "d", "--frob"], "unknown option --frob"),
        (["verify", "d", "-x"], "unknown option -x"),
        (["token"], "token needs TOKENS_FILE"),
        (["token", "f", ""], "LABEL is empty (an unset variable?): mockcloud-admin token TOKENS_FILE [LABEL] [--keys KEY,KEY...]"),
        (["token", "f", "--require"], "--require is not an option of token"),
        (["settings", "x"], "unexpected argument x: mockcloud-admin settings"),
        (["tls", "frob"], "unknown command tls frob: tls takes ensure, renew, show"),
        (["tls", "show", "a", "b"], "unexpected argument b: mockcloud-admin tls [show] [OUT.crt] [--dir DIR]"),
        (["tls", "--dir"], "--dir needs a value: --dir DIR"),
        (["doctor", "--url", "--dir", "x"], "--url needs a value: --url https://HOST:PORT"),
        (["doctor", "x"], "unexpected argument x: mockcloud-admin doctor [--url https://HOST:PORT]"),
        (["backup", "d"], "backup needs FILE.tar"),
        (["restore", "f", "d", "e"], "unexpected argument e: mockcloud-admin restore FILE.tar DATA_DIR"),
    ])
    func aWrongCommandLineGetsItsSentenceAndTheUsage(arguments: [String], sentence: String) {
        let result = AdminCommand.run(arguments, environment: [:])
        #expect(result.status == 2)
        #expect(result.errors.first == "mockcloud-admin: " + sentence)
        #expect(result.errors.dropFirst().first?.hasPrefix("usage: mockcloud-admin") == true)
        #expect(result.script == nil && result.output.isEmpty)
    }

    @Test(arguments: [
        (["tls"], "tls.sh", ["show"]),
        (["tls", "show", "phone.crt"], "tls.sh", ["show", "phone.crt"]),
        (["tls", "--dir", "/d", "ensure", "box.local", "10.0.0.2"], "tls.sh", ["--dir", "/d", "ensure", "box.local", "10.0.0.2"]),
        (["tls", "renew", "--dir=/d"], "tls.sh", ["--dir", "/d", "renew"]),
        (["doctor"], "doctor.sh", []),
        (["doctor", "--url", "https://127.0.0.1:8443"], "doctor.sh", ["--url", "https://127.0.0.1:8443"]),
        (["backup", "/var/lib/mockcloud", "b.tar"], "backup.sh", ["backup", "/var/lib/mockcloud", "b.tar"]),
        (["restore", "b.tar", "/srv/data"], "backup.sh", ["restore", "b.tar", "/srv/data"]),
        (["restore", "--", "-b.tar", "/srv/data"], "backup.sh", ["restore", "-b.tar", "/srv/data"]),
        (["doctor", "--help"], "doctor.sh", ["--help"]),
        (["tls", "-h"], "tls.sh", ["--help"]),
        (["backup", "--help"], "backup.sh", ["--help"]),
    ])
    func theBoxCommandsGoToTheirScripts(arguments: [String], script: String, passed: [String]) {
        let result = AdminCommand.run(arguments, environment: [:])
        #expect(result.script == AdminCommand.ScriptRun(name: script, arguments: passed))
        #expect(result.status == 0 && result.errors.isEmpty)
    }

    @Test func optionsMayComeAnywhereAndTheDataCommandsStayHere() {
        for arguments in [["--keys", "/nonexistent", "verify", "/tmp"], ["verify", "--keys=/nonexistent", "/tmp"]] {
            let result = AdminCommand.run(arguments, environment: [:])
            #expect(result.script == nil)
            #expect(result.errors.first?.contains("/nonexistent") == true)
        }
        #expect(AdminCommand.run(["settings"], environment: [:]).output.contains { $0.hasPrefix("MOCKCLOUD_HMAC_KEYS\t") })
    }
}
