import MockCloudCommandLine
import Testing

/// The parser's rules, on a small tool of the shapes the real ones use:
/// commands of one and two words, a default subcommand, required, optional
/// and repeated arguments, common and per-command options, a refused one.
@Suite struct CommandLineToolTests {
    enum Action: Equatable { case copy, remoteAdd, remoteShow, names }

    static let tool = CommandLineTool<Action>(
        name: "demo",
        commands: [
            .init("copy", .copy, arguments: [Argument("FROM"), Argument("TO", .optional)],
                  options: [.flag("--force", "copy: overwrite")], summary: "copy FROM to TO"),
            .init("remote add", .remoteAdd, arguments: [Argument("URL")], summary: "add a remote"),
            .init("remote show", .remoteShow, summary: "list them", isDefault: true),
            .init("names", .names, arguments: [Argument("NAME", .many)], summary: "print names"),
        ],
        commonOptions: [
            .value("--user", "NAME", required: true, "who"),
            .flag("--json", "JSON out"),
            .refused("--password", "--password would show in ps: use --password-file"),
        ],
        notes: "exit: 0 done; 2 usage")

    func parsed(_ arguments: [String]) throws -> ParsedCommand<Action> {
        guard case .run(let parsed) = try Self.tool.parse(arguments) else { throw UsageError("help, not a command") }
        return parsed
    }

    @Test func theDescriptionIsConsistent() {
        #expect(Self.tool.problems.isEmpty)
        let broken = CommandLineTool<Action>(
            name: "broken",
            commands: [
                .init("a", .copy, arguments: [Argument("X", .many), Argument("Y")], options: [.flag("--x", "")]),
                .init("a", .names, arguments: [Argument("P", .optional), Argument("Q")], options: [.value("--x", "V", "")]),
            ],
            commonOptions: [.flag("-v", ""), .flag("--help", "")])
        #expect(broken.problems.count == 7)
    }

    @Test func optionsMayComeAnywhereInEitherSpelling() throws {
        for arguments in [["copy", "a", "b", "--user", "u", "--json"], ["--user=u", "copy", "--json", "a", "b"],
                          ["--json", "copy", "a", "--user", "u", "b"]] {
            let line = try parsed(arguments)
            #expect(line.action == .copy && line.argument("FROM") == "a" && line.argument("TO") == "b")
            #expect(line.value("--user") == "u" && line.isSet("--json") && !line.isSet("--force"))
        }
    }

    @Test func argumentsOfEachCount() throws {
        #expect(try parsed(["copy", "a", "--user", "u"]).argument("TO") == nil)
        #expect(try parsed(["names", "--user", "u"]).all("NAME") == [])
        #expect(try parsed(["names", "x", "y", "z", "--user", "u"]).all("NAME") == ["x", "y", "z"])
        #expect(try parsed(["remote", "add", "https://x", "--user", "u"]).argument("URL") == "https://x")
    }

    @Test func aGroupAloneRunsItsDefaultCommand() throws {
        #expect(try parsed(["remote", "--user", "u"]).action == .remoteShow)
        #expect(try parsed(["remote", "show", "--user", "u"]).action == .remoteShow)
    }

    @Test func doubleDashEndsTheOptionsAndASingleDashIsAnArgument() throws {
        let line = try parsed(["--user", "u", "copy", "--", "--force", "-"])
        #expect(line.argument("FROM") == "--force" && line.argument("TO") == "-" && !line.isSet("--force"))
        #expect(try parsed(["copy", "-", "--user", "u"]).argument("FROM") == "-")
    }

    @Test func aValueMayStartWithOneDashButNotTwo() throws {
        #expect(try parsed(["copy", "a", "--user", "-u"]).value("--user") == "-u")
        #expect(try parsed(["copy", "a", "--user=--u"]).value("--user") == "--u")
        #expect(throws: UsageError("--user needs a value: --user NAME")) { try parsed(["copy", "a", "--user", "--json"]) }
    }

    @Test func theCommandLineIsReadInOrderUpToHelp() {
        #expect(throws: UsageError("unknown option --bogus")) { try Self.tool.parse(["copy", "--bogus", "-h"]) }
    }

    @Test(arguments: [
        (["copy", "--help"], Action.copy),
        (["remote", "-h"], Action.remoteShow),
        (["remote", "add", "--user", "u", "--help", "x"], Action.remoteAdd),
    ])
    func helpAfterACommandIsThatCommandsHelp(arguments: [String], action: Action) throws {
        guard case .help(let command) = try Self.tool.parse(arguments) else {
            Issue.record("no help")
            return
        }
        #expect(command?.action == action)
    }

    @Test func helpBeforeAnyCommandIsTheToolsHelp() throws {
        guard case .help(let command) = try Self.tool.parse(["--help", "copy"]) else {
            Issue.record("no help")
            return
        }
        #expect(command == nil)
    }

    @Test(arguments: [
        ([String](), "no command"),
        ([""], "unknown command \"\""),
        (["move"], "unknown command move"),
        (["remote", "drop"], "unknown command remote drop: remote takes add, show"),
        (["remote", ""], "unknown command remote \"\": remote takes add, show"),
        (["copy", "--user", "u"], "copy needs FROM"),
        (["copy", "", "--user", "u"], "FROM is empty (an unset variable?): demo copy FROM [TO] [--force]"),
        (["copy", "a", "", "--user", "u"], "TO is empty (an unset variable?): demo copy FROM [TO] [--force]"),
        (["names", "x", "", "--user", "u"], "NAME is empty (an unset variable?): demo names [NAME...]"),
        (["copy", "a", "b", "c", "--user", "u"], "unexpected argument c: demo copy FROM [TO] [--force]"),
        (["copy", "a"], "--user NAME is required: who"),
        (["copy", "a", "--user"], "--user needs a value: --user NAME"),
        (["copy", "a", "--user", ""], "--user is empty (an unset variable?): --user NAME"),
        (["copy", "a", "--user="], "--user is empty (an unset variable?): --user NAME"),
        (["copy", "a", "--user", "u", "--user", "u"], "--user is given twice"),
        (["copy", "a", "--user", "u", "--user=v"], "--user is given twice"),
        (["copy", "a", "--user", "u", "--json", "--json"], "--json is given twice"),
        (["copy", "a", "--user", "u", "--json=yes"], "--json takes no value"),
        (["copy", "a", "--user", "u", "--jsn"], "unknown option --jsn"),
        (["copy", "a", "--user", "u", "-j"], "unknown option -j"),
        (["copy", "a", "--user", "u", "--="], "unknown option --"),
        (["names", "--force", "--user", "u"], "--force is not an option of names"),
        (["copy", "a", "--password", "p", "--user", "u"], "--password would show in ps: use --password-file"),
        (["copy", "a", "--password=p"], "--password would show in ps: use --password-file"),
    ])
    func aWrongCommandLineIsOneSentence(arguments: [String], sentence: String) {
        #expect(throws: UsageError(sentence)) { try Self.tool.parse(arguments) }
    }

    @Test func theUsageShowsEveryCommandItsArgumentsAndEveryOption() {
        let usage = Self.tool.usage
        #expect(usage.hasPrefix("""
            usage: demo copy FROM [TO] [--force]
                   demo remote add URL
                   demo remote [show]
                   demo names [NAME...]
              copy         copy FROM to TO
            """))
        #expect(usage.contains("\n  --user NAME  required: who\n"))
        #expect(usage.contains("\n  --force      copy: overwrite\n"))
        #expect(!usage.contains("--password"))
        #expect(usage.hasSuffix("\nexit: 0 done; 2 usage"))
    }
}
