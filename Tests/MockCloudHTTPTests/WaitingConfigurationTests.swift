import Foundation
import MockCloudConfig
import MockCloudHTTP
import MockCloudStore
import MockCloudTestSupport
import MockCloudWire
import Testing

/// The facts a waiting request rests on, held to their one home
/// (`Capacity`): fcgiwrap's process count in the launcher and in the
/// package's unit drop-in, nginx's per-address cap, room for one address's
/// requests beside every wait, nginx waiting for an answer longer than the longest wait
/// plus the programs' own time limit, nginx telling a waiting program that
/// its client left, and the launcher checking the per-address share as the
/// programs do.
@Suite struct WaitingConfigurationTests {
    /// The number after `-c` on the fcgiwrap command line in `text`.
    static func processes(in text: String, command: String) throws -> Int {
        let line = try #require(text.split(separator: "\n").first { $0.contains(command) && $0.contains(" -c ") },
                                "no \(command) line with -c")
        let after = try #require(line.components(separatedBy: " -c ").dropFirst().first)
        return try #require(Int(after.prefix { $0.isNumber }))
    }

    @Test func theLauncherAndThePackagesUnitStartTheSameNumberOfFcgiwrapProcesses() throws {
        let launcher = try repositoryFile("nginx/mockcloud-nginx.sh")
        #expect(try Self.processes(in: launcher, command: "\"$fcgiwrap\" -f") == Capacity.fcgiwrapProcesses)
        let dropIn = try repositoryFile("packaging/debian/fcgiwrap-mockcloud.conf")
        #expect(try Self.processes(in: dropIn, command: "ExecStart=/usr/sbin/fcgiwrap") == Capacity.fcgiwrapProcesses)
    }

    /// FastCGI mode: the launcher's loops for waits hold, when nothing is
    /// set, what `Capacity` says (and the settings list shows).
    @Test func theLaunchersLoopsForWaitsHoldCapacitysWaits() throws {
        let launcher = try repositoryFile("nginx/mockcloud-nginx.sh")
        #expect(launcher.contains("FASTCGI_WAITS=\"${MOCKCLOUD_FASTCGI_WAITS:-\(Capacity.loopWaits)}\""))
        #expect(launcher.contains(
            "FASTCGI_WAITS_PER_ADDRESS=\"${MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS:-\(Capacity.loopWaitsPerAddress)}\""))
        #expect(launcher.contains("--waits \"$((10#$FASTCGI_WAITS))\""))
    }

    @Test func nginxCapsOneAddressAtItsShareAndSaysSo() throws {
        let locations = try repositoryFile("nginx/mockcloud-locations.conf")
        let line = try #require(locations.split(separator: "\n").first { $0.hasPrefix("limit_conn ") })
        let cap = try #require(Int(line.split(separator: " ").last!.dropLast()))
        #expect(cap == Capacity.requestsPerAddress)
        #expect(locations.contains("(more than \(Capacity.requestsPerAddress) in progress)"))
        #expect(Capacity.fcgiwrapProcesses - Capacity.waitingAtOnce >= cap)
    }

    @Test func nginxWaitsLongerThanTheLongestWaitAndTheProgramsLimit() throws {
        let locations = try repositoryFile("nginx/mockcloud-locations.conf")
        let line = try #require(locations.split(separator: "\n").first { $0.contains("fastcgi_read_timeout") })
        let seconds = try #require(Int(line.split(separator: " ").last!.dropLast(2)))  // "90s;"
        #expect(seconds > WireLimits.waitSeconds.upperBound + Int(CGIProgram.timeLimitSeconds))
        #expect(locations.contains("no answer within \(seconds) seconds"))
    }

    @Test func nginxClosesTheProgramsConnectionWhenTheClientGoes() throws {
        let locations = try repositoryFile("nginx/mockcloud-locations.conf")
        let lines = locations.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.filter { $0.hasPrefix("fastcgi_ignore_client_abort") } == ["fastcgi_ignore_client_abort off;"])
    }

    @Test func theLauncherRefusesTheShareTheProgramsRefuse() throws {
        let launcher = try repositoryFile("nginx/mockcloud-nginx.sh")
        #expect(launcher.contains("10#$WAITS_PER_ADDRESS >= 1 && 10#$WAITS_PER_ADDRESS <= \(Capacity.waitingAtOnce)"))
        #expect(launcher.contains("must be from 1 to \(Capacity.waitingAtOnce) (the box's places for waiting requests)"))
        #expect(ServiceConfig.defaultWaitsPerAddress <= Capacity.waitingAtOnce)
    }
}
