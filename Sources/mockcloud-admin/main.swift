import MockCloudAdmin
import MockCloudConfig
import MockCloudSystem

let result = AdminCommand.run(Array(CommandLine.arguments.dropFirst()), environment: .process)
if let script = result.script {
    let failure = AdminScripts.exec(script.name, script.arguments, environment: .process)
    try? Sys.writeAll(.standardError, Array((failure + "\n").utf8))
    Sys.exit(2)
}
for line in result.output { try? Sys.writeAll(.standardOutput, Array((line + "\n").utf8)) }
for line in result.errors { try? Sys.writeAll(.standardError, Array((line + "\n").utf8)) }
Sys.exit(result.status)
