import MockCloudConfig
import MockCloudStore
import Testing

/// The waits one client address may hold (`MOCKCLOUD_WAITS_PER_ADDRESS`),
/// read with the other settings for every request: a value that is not a
/// whole number of the box's places is a misconfiguration that names the
/// range, and `MOCKCLOUD_LIMITS=off` turns the share off with nginx's cap.
@Suite struct ServiceConfigWaitShareTests {
    @Test func unsetItIsTheDefaultTheSettingsListShows() throws {
        #expect(try ServiceConfig.waitsPerAddress([:]) == ServiceConfig.defaultWaitsPerAddress)
        #expect(try ServiceConfig.waitsPerAddress(["MOCKCLOUD_WAITS_PER_ADDRESS": ""]) == 4)
        let listed = try #require(Setting.all.first { $0.name == "MOCKCLOUD_WAITS_PER_ADDRESS" })
        #expect(listed.defaultValue == "`\(ServiceConfig.defaultWaitsPerAddress)`")
        #expect(listed.reader == .programs)
    }

    @Test(arguments: [("1", 1), ("2", 2), ("16", 16), ("48", 48), ("007", 7)])
    func aWholeNumberOfPlacesIsTaken(_ text: String, _ places: Int) throws {
        #expect(try ServiceConfig.waitsPerAddress(["MOCKCLOUD_WAITS_PER_ADDRESS": text]) == places)
        #expect(try ServiceConfig(environment: ["MOCKCLOUD_DATA": "/d", "MOCKCLOUD_WAITS_PER_ADDRESS": text])
            .waitsPerAddress == places)
    }

    @Test(arguments: ["0", "49", "1000", "-1", "+4", " 4", "4 ", "four", "4.0", "0x4"])
    func anythingElseIsRefusedNamingTheRange(_ text: String) {
        let error = ConfigError("MOCKCLOUD_WAITS_PER_ADDRESS=\(text) is not a whole number from 1 to \(Capacity.waitingAtOnce) "
            + "(the box's places for waiting requests): the waits one client address may hold at once")
        #expect(throws: error) { try ServiceConfig.waitsPerAddress(["MOCKCLOUD_WAITS_PER_ADDRESS": text]) }
        // Every request of a program so configured fails with it, as for the other settings.
        #expect(throws: error) {
            try ServiceConfig(environment: ["MOCKCLOUD_DATA": "/d", "MOCKCLOUD_WAITS_PER_ADDRESS": text])
        }
    }

    @Test func limitsOffCountsNoWaitsByAddress() throws {
        #expect(try ServiceConfig.waitsPerAddress(["MOCKCLOUD_LIMITS": "off"]) == nil)
        #expect(try ServiceConfig.waitsPerAddress(["MOCKCLOUD_LIMITS": "off", "MOCKCLOUD_WAITS_PER_ADDRESS": "8"]) == nil)
        #expect(try ServiceConfig.waitsPerAddress(["MOCKCLOUD_LIMITS": "on", "MOCKCLOUD_WAITS_PER_ADDRESS": "8"]) == 8)
        // Still checked: a bad value is wrong whether or not it is used.
        #expect(throws: ConfigError.self) {
            try ServiceConfig.waitsPerAddress(["MOCKCLOUD_LIMITS": "off", "MOCKCLOUD_WAITS_PER_ADDRESS": "0"])
        }
    }

    @Test(arguments: ["yes", "OFF", "0", "false", " off"])
    func limitsTakeOnlyOff(_ text: String) {
        #expect(throws: ConfigError("MOCKCLOUD_LIMITS=\(text) is not accepted: set it to off (no per-address limits, "
            + "for a box every client reaches through one address) or leave it unset")) {
            try ServiceConfig.waitsPerAddress(["MOCKCLOUD_LIMITS": text])
        }
    }
}
