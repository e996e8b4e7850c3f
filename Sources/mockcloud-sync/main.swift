import MockCloudSync
import MockCloudSystem

Sys.exit(await SyncCommand.main(Array(CommandLine.arguments.dropFirst()), environment: Sys.environmentValue))
