@testable import MockCloudSync
import Testing

/// `mockcloud-sync settings merge`'s usage (the merge itself: SettingsPerFieldTests).
@Suite struct SettingsMergeCommandTests {
    @Test(arguments: [
        (["settings", "merge", "f.json"], "settings merge needs --edited-at TIME"),
        (["settings", "merge", "f.json", "--edited-at", "soon"], "--edited-at soon is not a time stamp"),
        (["settings", "merge", "f.json", "--edited-at", "2026-05-18T10:01:00Z", "--if-match", "\"x\""],
         "--if-match does not apply to settings merge"),
        (["settings", "put", "f.json", "--edited-at", "2026-05-18T10:01:00Z"], "--edited-at applies to settings merge only"),
    ])
    func settingsMergeWithoutAnEditTimeIsAUsageError(_ arguments: [String], _ message: String) async {
        let common = ["--url", "https://127.0.0.1:1", "--ca", "/nonexistent", "--user-key", "u1"]
        #expect(await SyncCommand.main(arguments + common, environment: { _ in nil }) == 2, "\(message)")
    }
}
