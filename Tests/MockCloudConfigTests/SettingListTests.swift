import Glibc
import MockCloudConfig
import MockCloudSystem
import MockCloudTestSupport
import Testing

/// `Setting.all` is the one list of the service's settings: the README's
/// table, the launcher, the test harness's clean slate and nginx's
/// `fastcgi_param`s must name exactly those, with the same defaults.
@Suite struct SettingListTests {
    static func repositoryFile(_ relative: String) throws -> String { try MockCloudTestSupport.repositoryFile(relative) }

    /// Every `MOCKCLOUD_…` name in `text`.
    static func names(in text: String) -> Set<String> {
        var found: Set<String> = []
        var word = ""
        for character in text + " " {
            if character.isUppercase || character.isNumber || character == "_" {
                word.append(character)
                continue
            }
            if word.hasPrefix("MOCKCLOUD_"), word.count > "MOCKCLOUD_".count, !word.hasSuffix("_") { found.insert(word) }
            word = ""
        }
        return found
    }

    static let names = Set(Setting.all.map(\.name))

    @Test func theNamesAreUniqueAndEachSaysWhatItDoes() {
        #expect(Self.names.count == Setting.all.count)
        for setting in Setting.all { #expect(!setting.meaning.isEmpty, "\(setting.name)") }
    }

    @Test func theReadmeTableHasARowForEachWithItsDefault() throws {
        var rows: [String: String] = [:]
        for line in try Self.repositoryFile("README.md").split(separator: "\n") where line.hasPrefix("| `MOCKCLOUD_") {
            let cells = line.split(separator: "|").map { String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
            for name in Self.names(in: cells[0]) { rows[name] = cells[1] }
        }
        #expect(Set(rows.keys) == Self.names)
        for setting in Setting.all { #expect(rows[setting.name] == setting.defaultValue, "\(setting.name)") }
    }

    @Test func theLauncherKnowsEachOfItsSettingsAndNoOther() throws {
        let launcher = Self.names(in: try Self.repositoryFile("nginx/mockcloud-nginx.sh"))
        let read = Set(Setting.all.filter { $0.reader != .admin }.map(\.name))
        #expect(read.subtracting(launcher) == [])
        #expect(launcher.subtracting(Self.names) == [])
    }

    @Test func theTestHarnessStartsFromACleanSlateOfEverySetting() throws {
        // The `unset` statement and its continuation lines.
        var statement = ""
        for line in try Self.repositoryFile("Tests/support/stack.sh").split(separator: "\n") {
            if statement.isEmpty && !line.hasPrefix("unset MOCKCLOUD_") { continue }
            statement += line
            if !line.hasSuffix("\\") { break }
        }
        // The harness sets MOCKCLOUD_CGI_BIN itself; the admin tool's setting is not the stack's.
        #expect(Self.names(in: statement) == Self.names.subtracting(["MOCKCLOUD_CGI_BIN", "MOCKCLOUD_ADMIN_SCRIPTS"]))
    }

    @Test func nginxPassesEachProgramSettingAndNoOther() throws {
        let locations = try Self.repositoryFile("nginx/mockcloud-locations.conf")
        let passed = Set(locations.split(separator: "\n").filter { $0.contains("fastcgi_param MOCKCLOUD_") }.flatMap {
            Self.names(in: String($0))
        })
        #expect(passed == Set(Setting.all.filter { $0.reader == .programs || $0.reader == .inbox }.map(\.name)))
    }
}
