import MockCloudAdmin
import MockCloudConfig
import MockCloudSystem

let arguments = Array(CommandLine.arguments.dropFirst())
if let command = arguments.first, let script = AdminScripts.script(for: command) {
    let failure = AdminScripts.exec(script.name, script.arguments + arguments.dropFirst(), environment: .process)
    try? Sys.writeAll(.standardError, Array((failure + "\n").utf8))
    Sys.exit(2)
}
let result = AdminCommand.run(arguments, environment: .process)
for line in result.output { try? Sys.writeAll(.standardOutput, Array((line + "\n").utf8)) }
for line in result.errors { try? Sys.writeAll(.standardError, Array((line + "\n").utf8)) }
Sys.exit(result.status)
