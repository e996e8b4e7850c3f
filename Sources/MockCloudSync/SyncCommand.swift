import MockCloudClient
import MockCloudJSON

/// `mockcloud-sync`: push a folder, pull the feed into a folder, settings.
/// Exit codes (also in its usage and docs/SYNC.md, "The command-line tool"):
public enum SyncCommand {
    /// 0: everything asked for is on the server / in the folder.
    static let done: Int32 = 0
    /// 1: the run finished, but not everything was stored: an item was
    /// refused (400, 413, 507) or the server holds a newer version (409); a
    /// settings write whose condition failed (409, 412; `current` printed).
    static let notAllStored: Int32 = 1
    /// 2: the command line is wrong.
    static let usage: Int32 = 2
    /// 3: a local file (the folder, the CA, the state) could not be read or written.
    static let localFailure: Int32 = 3
    /// 4: the server's certificate did not verify against the CA (or the CA
    /// file did not have the expected SHA-256).
    static let untrusted: Int32 = 4
    /// 5: the server stayed unreachable or failing through every retry;
    /// what was acknowledged is recorded, so running again resumes.
    static let unavailable: Int32 = 5
    /// 6: the server refused the request (a bad key, a token, no settings stored).
    static let refused: Int32 = 6
    /// 7: an answer the client did not understand.
    static let badAnswer: Int32 = 7
    /// 8: another push is running on the folder (it holds the folder's
    /// lock): nothing was done.
    static let busy: Int32 = 8
    /// 130: interrupted (SIGINT's conventional status); what was
    /// acknowledged is recorded, so running again resumes.
    static let interrupted: Int32 = 130

    /// Runs the command line; returns the exit status. `environment` looks
    /// a variable up (the token's, `MOCKCLOUD_SYNC_TOKEN`). `pull --follow`
    /// and `push --watch` run until SIGINT or SIGTERM, which end them cleanly.
    public static func main(_ arguments: [String], environment: @escaping @Sendable (String) -> String?) async -> Int32 {
        if case .run(let parsed)? = try? SyncOptions.tool.parse(arguments), parsed.isSet("--follow") || parsed.isSet("--watch") {
            return await cancellingOnInterrupt { await run(arguments, environment: environment) }
        }
        return await run(arguments, environment: environment)
    }

    static func run(_ arguments: [String], environment: (String) -> String?) async -> Int32 {
        let options: SyncOptions
        do {
            switch try SyncOptions.tool.parse(arguments) {
            case .help:
                var output = Output(json: false)
                output.result(SyncOptions.usage, [])
                return done
            case .run(let parsed):
                options = try SyncOptions(parsed, environment: environment)
            }
        } catch {
            var output = Output(json: false)
            output.error("\(error)")
            output.usage(SyncOptions.usage)
            return usage
        }
        var output = Output(json: options.json)
        do {
            let token = try options.token?.read()
            let trust = try TrustAnchor(caFile: options.caFile, expectedSHA256: options.caSHA256)
            let transport = try CurlTransport(baseURL: options.url, trust: trust)
            let client = BoxClient(
                configuration: ClientConfiguration(
                    userKey: options.userKey, deviceID: options.deviceID, token: token),
                transport: transport)
            switch options.command {
            case .push(let directory) where options.watch:
                return try await PushWatch(client: client, directory: directory, deleteMissing: options.deleteMissing)
                    .run(&output)
            case .push(let directory):
                return try await Push(client: client, directory: directory, deleteMissing: options.deleteMissing)
                    .run(&output)
            case .pull(let directory):
                return try await Pull(client: client, directory: directory, excludeOwn: options.excludeOwn,
                                      follow: options.follow).run(&output)
            case .settingsGet:
                return try await SettingsCommand.get(client, &output)
            case .settingsPut(let file):
                return try await SettingsCommand.write(client, file: file, patch: false, ifMatch: options.ifMatch, &output)
            case .settingsPatch(let file):
                return try await SettingsCommand.write(client, file: file, patch: true, ifMatch: options.ifMatch, &output)
            case .settingsMerge(let file, let editedAt):
                return try await SettingsCommand.merge(client, file: file, editedAt: editedAt, &output)
            }
        } catch let error as ClientError {
            output.error(error.description)
            if options.json { output.result("", [("error", .string(error.description))]) }
            return status(for: error)
        } catch let error as FolderBusy {
            output.error(error.description)
            if options.json { output.result("", [("error", .string(error.description))]) }
            return busy
        } catch is CancellationError {
            return interrupted
        } catch {
            output.error("\(error)")
            return localFailure
        }
    }

    static func status(for error: ClientError) -> Int32 {
        switch error.code {
        case .untrusted: return untrusted
        case .unavailable: return unavailable
        case .refused: return refused
        case .badAnswer: return badAnswer
        default: return localFailure
        }
    }
}
