/// A command-line tool described once: its commands, their arguments and
/// their options. The description is the parser, the usage text and the
/// errors, so the three cannot disagree (swift-argument-parser's idea, in
/// the standard library alone).
///
/// The rules, the same for every tool:
/// - Options may come before, between or after the command's words and
///   arguments; `--name VALUE` and `--name=VALUE` are the same; `--` ends
///   the options (what follows is an argument even if it starts with `-`).
/// - `-h` or `--help` anywhere (not as an option's value) asks for help.
/// - A command line that cannot be run is a `UsageError` whose sentence
///   says what is wrong: an unknown, repeated or misplaced option, a
///   missing or empty value, a missing, empty or extra argument, an unknown
///   command. The tool prints it and the usage, and exits 2.
package struct CommandLineTool<Action: Sendable>: Sendable {
    /// The program's name, e.g. `mockcloud-sync`.
    package let name: String
    package let commands: [Command<Action>]
    /// Options every command takes.
    package let commonOptions: [Option]
    /// Text after the generated usage: exit statuses, the environment.
    package let notes: String

    package init(name: String, commands: [Command<Action>], commonOptions: [Option] = [], notes: String = "") {
        self.name = name
        self.commands = commands
        self.commonOptions = commonOptions
        self.notes = notes
    }

    /// Reads `arguments` (without the program's name).
    package func parse(_ arguments: [String]) throws -> ParseResult<Action> {
        var given: [String: String] = [:]
        var order: [String] = []
        var words: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !Self.looksLikeOption(argument) {
                words.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" || argument == "--help" { return .help(command(named: words)) }
            let equals = argument.firstIndex(of: "=")
            let name = equals.map { String(argument[..<$0]) } ?? argument
            let inline = equals.map { String(argument[argument.index(after: $0)...]) }
            guard let option = option(named: name) else { throw UsageError("unknown option \(Self.quoted(name))") }
            if case .refused(let sentence) = option.kind { throw UsageError(sentence) }
            guard given[name] == nil else { throw UsageError("\(name) is given twice") }
            switch option.kind {
            case .flag:
                if inline != nil { throw UsageError("\(name) takes no value") }
                given[name] = ""
            case .value(let placeholder):
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                        throw UsageError("\(name) needs a value" + shape(of: name, placeholder))
                    }
                    value = arguments[index]
                    index += 1
                }
                if value.isEmpty { throw UsageError("\(name) is empty (an unset variable?)" + shape(of: name, placeholder)) }
                given[name] = value
            case .refused:
                break
            }
            order.append(name)
        }

        let (command, taken) = try match(words)
        let allowed = commonOptions + command.options
        for name in order where Self.option(named: name, in: allowed) == nil {
            throw UsageError("\(name) is not an option of \(command.title)")
        }
        let assigned = try assign(Array(words.dropFirst(taken)), to: command)
        for option in allowed where option.required && given[option.name] == nil {
            throw UsageError("\(option.synopsis) is required: \(option.help)")
        }
        return .run(ParsedCommand(command: command, values: given, arguments: assigned))
    }

    /// The usage: a line per command, what each does, the options, the notes.
    package var usage: String {
        var lines: [String] = []
        for (i, command) in commands.enumerated() {
            lines.append((i == 0 ? "usage: " : "       ") + name + " " + command.synopsis)
        }
        let summaries = commands.filter { !$0.summary.isEmpty }.map { ($0.title, $0.summary) }
        lines += Self.table(summaries, indent: 2)
        var seen: Set<String> = []
        var options: [(String, String)] = []
        for option in commonOptions + commands.flatMap(\.options) where !option.isRefused {
            let synopsis = option.synopsis
            guard seen.insert(synopsis).inserted else { continue }
            options.append((synopsis, (option.required ? "required: " : "") + option.help))
        }
        if !options.isEmpty {
            lines.append("options:")
            lines += Self.table(options, indent: 2)
        }
        if !notes.isEmpty { lines.append(notes) }
        return lines.joined(separator: "\n")
    }

    /// What is wrong with the description itself; each tool's tests check
    /// that there is nothing: an option that is a flag in one command and
    /// takes a value in another (the parser reads options before it knows
    /// the command), an option not spelled `--name` or spelled `--help`, two
    /// commands with the same words, an argument after a `.many` one or a
    /// required one after an optional one.
    package var problems: [String] {
        var problems: [String] = []
        let options = commonOptions + commands.flatMap(\.options)
        for option in options {
            if !option.name.hasPrefix("--") || option.name.utf8.count < 3 || option.name.contains("=") || option.name == "--help" {
                problems.append("\(option.name): an option is spelled --name, and --help is taken")
            }
            func takesValue(_ option: Option) -> Bool {
                if case .flag = option.kind { return false }
                return true
            }
            if options.contains(where: { $0.name == option.name && takesValue($0) != takesValue(option) }) {
                problems.append("\(option.name) is a flag in one place and takes a value in another")
            }
        }
        for (i, command) in commands.enumerated() {
            if commands[..<i].contains(where: { $0.words == command.words }) { problems.append("\(command.title) is there twice") }
            for (j, argument) in command.arguments.enumerated() where j > 0 {
                let before = command.arguments[j - 1].count
                if before == .many || (before == .optional && argument.count == .one) {
                    problems.append("\(command.title): \(argument.name) cannot follow \(command.arguments[j - 1].name)")
                }
            }
        }
        return problems
    }

    /// The command whose words `words` begins with (for help), if any.
    private func command(named words: [String]) -> Command<Action>? {
        (try? match(words))?.command
    }

    /// The command `words` names, and how many of them are its words: the
    /// longest command whose words all lead `words`, else a default command
    /// whose group's words are all there is.
    private func match(_ words: [String]) throws -> (command: Command<Action>, taken: Int) {
        var full: Command<Action>?
        for command in commands where command.words.count <= words.count && Array(words[..<command.words.count]) == command.words {
            if command.words.count > full?.words.count ?? 0 { full = command }
        }
        if let full { return (full, full.words.count) }
        for command in commands where command.isDefault && words == Array(command.words.dropLast()) {
            return (command, words.count)
        }
        guard let first = words.first else { throw UsageError("no command") }
        let depth = commands.map { zip($0.words, words).prefix(while: { $0 == $1 }).count }.max() ?? 0
        guard depth > 0 else { throw UsageError("unknown command \(Self.quoted(first))") }
        let group = words.prefix(depth).joined(separator: " ")
        let choices = commands.filter { $0.words.count > depth && $0.words.starts(with: words.prefix(depth)) }
            .map { $0.words[depth] }.joined(separator: ", ")
        guard words.count > depth else { throw UsageError("\(group) needs one of: \(choices)") }
        throw UsageError("unknown command \(group) \(Self.quoted(words[depth])): \(group) takes \(choices)")
    }

    /// The positional arguments after the command's words, by name.
    private func assign(_ values: [String], to command: Command<Action>) throws -> [String: [String]] {
        var assigned: [String: [String]] = [:]
        var rest = values[...]
        for argument in command.arguments {
            switch argument.count {
            case .one:
                guard let value = rest.popFirst() else { throw UsageError("\(command.title) needs \(argument.name)") }
                assigned[argument.name] = [value]
            case .optional:
                if let value = rest.popFirst() { assigned[argument.name] = [value] }
            case .many:
                assigned[argument.name] = Array(rest)
                rest = []
            }
            if assigned[argument.name]?.contains("") == true {
                throw UsageError("\(argument.name) is empty (an unset variable?): \(name) \(command.synopsis)")
            }
        }
        if let extra = rest.first {
            throw UsageError("unexpected argument \(Self.quoted(extra)): \(name) \(command.synopsis)")
        }
        return assigned
    }

    /// `: --url URL` for the messages about a value, when every command
    /// means the same by `name` (mockcloud-admin's `--keys` does not).
    private func shape(of name: String, _ placeholder: String) -> String {
        let all = (commonOptions + commands.flatMap(\.options)).filter { $0.name == name }
        return all.allSatisfy({ $0.kind == .value(placeholder) }) ? ": \(name) \(placeholder)" : ""
    }

    // Plain loops in what every run goes through: the generic algorithms
    // (lazy, first(where:), filter) over the generic Command make every
    // start of the admin tool look types up at run time.
    private func option(named name: String) -> Option? {
        if let option = Self.option(named: name, in: commonOptions) { return option }
        for command in commands {
            if let option = Self.option(named: name, in: command.options) { return option }
        }
        return nil
    }

    private static func option(named name: String, in options: [Option]) -> Option? {
        for option in options where option.name == name { return option }
        return nil
    }

    /// `-x`, `--name`, `--name=value`, `--`: not `-` alone, nor an argument.
    private static func looksLikeOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument.utf8.count > 1
    }

    /// A word as an error message shows it: `""` when empty.
    static func quoted(_ word: String) -> String { word.isEmpty ? "\"\"" : word }

    /// Two columns, the second aligned; its further lines indented under it.
    private static func table(_ rows: [(String, String)], indent: Int) -> [String] {
        let width = rows.map { $0.0.count }.max() ?? 0
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        for (left, right) in rows {
            let parts = right.split(separator: "\n", omittingEmptySubsequences: false)
            lines.append(pad + left + String(repeating: " ", count: width - left.count + 2) + (parts.first ?? ""))
            for part in parts.dropFirst() { lines.append(pad + String(repeating: " ", count: width + 2) + part) }
        }
        return lines
    }
}

/// What `CommandLineTool.parse` found.
package enum ParseResult<Action: Sendable>: Sendable {
    /// A command to run, with its arguments and options.
    case run(ParsedCommand<Action>)
    /// `-h` / `--help`, after the words of this command if any.
    case help(Command<Action>?)
}

/// A command line that cannot be run: the sentence to print before the usage.
package struct UsageError: Error, Equatable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
