import MockCloudAdmin
import MockCloudHTTP
import Testing

/// Where `mockcloud-admin` looks for its shell scripts (which command goes
/// to which: AdminCommandLineTests).
@Suite struct AdminScriptsTests {
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
