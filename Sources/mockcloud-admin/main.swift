import Glibc
import MockCloudAdmin
import MockCloudHTTP
import MockCloudSystem

let result = AdminCommand.run(Array(CommandLine.arguments.dropFirst()), environment: .process)
for line in result.output { try? Sys.writeAll(1, Array((line + "\n").utf8)) }
for line in result.errors { try? Sys.writeAll(2, Array((line + "\n").utf8)) }
exit(result.status)
