// One declaration of a program's command line: its commands, their aliases, and its options with their kind,
// default, environment variable, help text and the commands they apply to. The parser and its validation
// (`CommandTable.parse`), the help pages (`CommandTable+Help`) and the bash, zsh and fish completion scripts
// (`CommandTable+Completion`) are all made from it, so that nothing can be in one and missing from another.

/// What an option takes.
public enum OptionKind: Sendable, Equatable {
    /// Present or not: `--json`.
    case flag
    /// One value, shown in help as the placeholder: `--timeout SECONDS`.
    case value(String)
    /// One of a fixed set of words: `--log-format text|json`; anything else is a usage error.
    case choice([String])
}

/// What the completion scripts offer for a value or an argument.
public enum CompletionHint: Sendable, Equatable {
    case nothing
    case files
    case directories
    case words([String])
    /// The program's own command names (for `help COMMAND`).
    case commands
    /// Words the program prints when run with `arguments` (`memo-client completion ids`), given the values of the
    /// options named in `passing` that are on the line being completed. Completing never does more than that.
    case program(arguments: [String], passing: [String])
}

/// Which commands an option applies to.
public enum OptionScope: Sendable, Equatable {
    /// Every command, and the line without one.
    case everywhere
    /// Only these (canonical command names; "" is the line without a command).
    case only([String])
}

/// One option of the command line.
public struct OptionSpec: Sendable {
    /// The long name, `--server`: the one every message and help line uses.
    public let name: String
    /// Other spellings: `-q`, `--cacert`.
    public let aliases: [String]
    public let kind: OptionKind
    /// May be given more than once (`--host NAME...`); otherwise twice is a usage error.
    public let repeatable: Bool
    /// The default as help shows it, nil when there is none worth saying.
    public let defaultValue: String?
    /// The environment variable read when the option is not given.
    public let environment: String?
    public let help: String
    public let scope: OptionScope
    public let completion: CompletionHint
    /// Declared for a change on its way (another branch builds its behaviour): refused as unknown, and left out
    /// of help and completion, until that change sets it to false.
    public let planned: Bool

    public init(
        _ name: String, aliases: [String] = [], _ kind: OptionKind = .flag, repeatable: Bool = false,
        default defaultValue: String? = nil, environment: String? = nil, scope: OptionScope = .everywhere,
        completion: CompletionHint? = nil, planned: Bool = false, help: String
    ) {
        self.name = name
        self.aliases = aliases
        self.kind = kind
        self.repeatable = repeatable
        self.defaultValue = defaultValue
        self.environment = environment
        self.help = help
        self.scope = scope
        if let completion {
            self.completion = completion
        } else if case .choice(let words) = kind {
            self.completion = .words(words)
        } else {
            self.completion = .nothing
        }
        self.planned = planned
    }

    /// Every spelling: the name first.
    public var spellings: [String] { [name] + aliases }

    public var takesValue: Bool { kind != .flag }

    /// `TEXT`, `own|openssl`; nil for a flag.
    public var placeholder: String? {
        switch kind {
        case .flag: nil
        case .value(let placeholder): placeholder
        case .choice(let words): words.joined(separator: "|")
        }
    }

    /// `--filter TEXT`, `--quiet`.
    public var synopsis: String { placeholder.map { "\(name) \($0)" } ?? name }

    public func applies(to command: String) -> Bool {
        switch scope {
        case .everywhere: true
        case .only(let commands): commands.contains(command)
        }
    }
}

/// One command (or mode) of the program. A command of two words (`certs init`) is reached by both words.
public struct CommandSpec: Sendable {
    public let name: String
    public let aliases: [String]
    /// The arguments after the options in its usage line: `ID TEXT... | ID -`.
    public let arguments: String
    /// One line (or a few) for the list of commands.
    public let summary: String
    /// The body of `COMMAND --help`, after the usage line.
    public let help: String
    /// What completion offers for its first argument.
    public let completion: CompletionHint
    /// Not listed in help or completion (a word scripts use, such as `completion ids`'s).
    public let hidden: Bool

    public init(
        _ name: String, aliases: [String] = [], arguments: String = "", completion: CompletionHint = .nothing,
        hidden: Bool = false, summary: String, help: String = ""
    ) {
        self.name = name
        self.aliases = aliases
        self.arguments = arguments
        self.summary = summary
        self.help = help
        self.completion = completion
        self.hidden = hidden
    }

    /// The words that name it: `["certs", "init"]`.
    public var words: [String] { name.split(separator: " ").map(String.init) }
}

/// An environment variable that is a setting of its own, not an option's.
public struct EnvironmentSpec: Sendable {
    public let name: String
    /// The values it takes, nil for free text.
    public let choices: [String]?
    public let help: String

    public init(_ name: String, choices: [String]? = nil, help: String) {
        self.name = name
        self.choices = choices
        self.help = help
    }
}

/// A program's whole command line.
public struct CommandTable: Sendable {
    public let program: String
    /// What help calls the line without a command ("the terminal front end (no command)"); nil when a program
    /// has a default command instead (`defaultCommand`).
    public let noCommandName: String?
    /// The command a line without one runs (`memo-server` serves).
    public let defaultCommand: String?
    /// What a command-like word is called in messages: "command" or "mode".
    public let commandWord: String
    public let commands: [CommandSpec]
    public let options: [OptionSpec]
    public let environment: [EnvironmentSpec]
    /// Top-level help: the usage lines, the prose before the command list, and the prose after the options.
    public let usage: String
    public let introduction: String
    public let epilogue: String

    public init(
        program: String, noCommandName: String? = nil, defaultCommand: String? = nil, commandWord: String = "command",
        usage: String, introduction: String, commands: [CommandSpec], options: [OptionSpec],
        environment: [EnvironmentSpec] = [], epilogue: String = ""
    ) {
        self.program = program
        self.noCommandName = noCommandName
        self.defaultCommand = defaultCommand
        self.commandWord = commandWord
        self.usage = usage
        self.introduction = introduction
        self.commands = commands
        self.options = options
        self.environment = environment
        self.epilogue = epilogue
    }

    /// The options in force (not planned).
    public var activeOptions: [OptionSpec] { options.filter { !$0.planned } }

    public var visibleCommands: [CommandSpec] { commands.filter { !$0.hidden } }

    public func option(named spelling: String) -> OptionSpec? {
        activeOptions.first { $0.spellings.contains(spelling) }
    }

    /// The command a name or alias stands for (`ls` is `list`; `certs init` by its two words).
    public func command(named name: String) -> CommandSpec? {
        commands.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// Every environment variable the program reads: its options' and its own settings'.
    public var environmentVariables: [String] {
        activeOptions.compactMap(\.environment) + environment.map(\.name)
    }
}
