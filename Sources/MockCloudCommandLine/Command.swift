/// One command of a tool: its words (`settings put`), its positional
/// arguments, its own options, a line for the usage, and the tool's value
/// for it (`action`), which the tool switches over.
package struct Command<Action: Sendable>: Sendable {
    package let words: [String]
    package let action: Action
    package let arguments: [Argument]
    package let options: [Option]
    /// What it does, for the usage (further lines after `\n`).
    package let summary: String
    /// The last word may be left out: `tls` alone means `tls show`.
    package let isDefault: Bool

    package init(
        _ words: String, _ action: Action, arguments: [Argument] = [], options: [Option] = [], summary: String = "",
        isDefault: Bool = false
    ) {
        // Split by hand: String.split is generic code whose run-time type
        // work every start of a tool would pay, once per command.
        var parts: [String] = []
        var rest = Substring(words)
        while let space = rest.firstIndex(of: " ") {
            parts.append(String(rest[..<space]))
            rest = rest[rest.index(after: space)...]
        }
        parts.append(String(rest))
        self.words = parts
        self.action = action
        self.arguments = arguments
        self.options = options
        self.summary = summary
        self.isDefault = isDefault
    }

    /// The words, e.g. `settings put`.
    package var title: String { words.joined(separator: " ") }

    /// The words, the arguments and the command's own options, as the usage
    /// shows them: `tls [show] [OUT.crt] [--dir DIR]`.
    package var synopsis: String {
        var parts = words
        if isDefault, let last = parts.popLast() { parts.append("[" + last + "]") }
        for argument in arguments {
            switch argument.count {
            case .one: parts.append(argument.name)
            case .optional: parts.append("[" + argument.name + "]")
            case .many: parts.append("[" + argument.name + "...]")
            }
        }
        for option in options where !option.isRefused {
            parts.append(option.required ? option.synopsis : "[" + option.synopsis + "]")
        }
        return parts.joined(separator: " ")
    }
}

/// A positional argument: `DIR`, `[LABEL]`, `[NAME...]`.
package struct Argument: Sendable, Equatable {
    package enum Count: Sendable, Equatable {
        /// Exactly one.
        case one
        /// One or none.
        case optional
        /// Any number, the rest of the line (the last argument only).
        case many
    }

    package let name: String
    package let count: Count

    package init(_ name: String, _ count: Count = .one) {
        self.name = name
        self.count = count
    }
}

/// An option: a flag (`--json`), one that takes a value (`--url URL`), or
/// one that is refused with a sentence saying what to use instead.
package struct Option: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case flag
        /// Takes a value; the placeholder the usage shows, e.g. `FILE`.
        case value(String)
        /// Refused with this sentence (an option that was removed).
        case refused(String)
    }

    /// `--url`.
    package let name: String
    package let kind: Kind
    package let required: Bool
    /// What it means, for the usage.
    package let help: String

    package static func flag(_ name: String, _ help: String) -> Option {
        Option(name: name, kind: .flag, required: false, help: help)
    }

    package static func value(_ name: String, _ placeholder: String, required: Bool = false, _ help: String) -> Option {
        Option(name: name, kind: .value(placeholder), required: required, help: help)
    }

    package static func refused(_ name: String, _ sentence: String) -> Option {
        Option(name: name, kind: .refused(sentence), required: false, help: "")
    }

    /// `--url URL` or `--json`.
    package var synopsis: String {
        if case .value(let placeholder) = kind { return name + " " + placeholder }
        return name
    }

    package var isRefused: Bool {
        if case .refused = kind { return true }
        return false
    }
}

/// A command line that can run: the command, its arguments by name, the
/// options given.
package struct ParsedCommand<Action: Sendable>: Sendable {
    package let command: Command<Action>
    /// Option name → value (`""` for a flag).
    let values: [String: String]
    /// Argument name → the values given for it.
    let arguments: [String: [String]]

    package var action: Action { command.action }

    /// The value of option `name`, nil when not given.
    package func value(_ name: String) -> String? { values[name] }

    /// True when flag `name` was given.
    package func isSet(_ name: String) -> Bool { values[name] != nil }

    /// The value of argument `name` (`.one`, `.optional`), nil when not given.
    package func argument(_ name: String) -> String? { arguments[name]?.first }

    /// The values of argument `name` (`.many`).
    package func all(_ name: String) -> [String] { arguments[name] ?? [] }
}
