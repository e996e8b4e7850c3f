import Glibc
import MockCloudSync

exit(await SyncCommand.main(Array(CommandLine.arguments.dropFirst())))
