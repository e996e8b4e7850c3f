import MockCloudAdmin
import MockCloudHTTP
import Testing

/// Which subcommands `mockcloud-admin` hands to its shell scripts, and where
/// it looks for them.
@Suite struct AdminScriptsTests {
    @Test func theBoxCommandsGoToTheirScriptsAndTheDataCommandsStay() {
        #expect(AdminScripts.script(for: "tls")?.name == "tls.sh")
        #expect(AdminScripts.script(for: "doctor")?.name == "doctor.sh")
        #expect(AdminScripts.script(for: "backup")?.name == "backup.sh")
        #expect(AdminScripts.script(for: "backup")?.arguments == ["backup"])
        #expect(AdminScripts.script(for: "restore")?.arguments == ["restore"])
        for command in ["verify", "sign", "rotate", "token", "--help", "tls.sh"] {
            #expect(AdminScripts.script(for: command) == nil)
        }
    }

    @Test func theScriptFolderIsTheEnvironmentsOrBesideTheExecutable() {
        #expect(AdminScripts.directories(environment: ["MOCKCLOUD_ADMIN_SCRIPTS": "/opt/x"]) == ["/opt/x"])
        let beside = AdminScripts.directories(environment: [:])
        #expect(beside.count == 3)
        #expect(beside[0].hasSuffix("/../lib/mockcloud/admin"))
        #expect(beside[1].hasSuffix("/../admin"))
    }

    @Test func aMissingScriptIsNamedWithWhereItWasLookedFor() {
        let message = AdminScripts.exec("doctor.sh", [], environment: ["MOCKCLOUD_ADMIN_SCRIPTS": "/nonexistent"])
        #expect(message == "mockcloud-admin: doctor.sh is in none of /nonexistent (set MOCKCLOUD_ADMIN_SCRIPTS to the folder that holds it)")
    }
}
