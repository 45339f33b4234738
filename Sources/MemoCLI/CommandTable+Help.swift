import Glibc

// The help pages made from a `CommandTable`: the whole help (`PROGRAM --help`), one command's
// (`PROGRAM COMMAND --help`), and the command reference README.md carries (checked by a test against this).

extension CommandTable {
    /// Help lines are wrapped to this width.
    static let width = 112

    /// What a line that asked for help or the version is answered with (the help of the command named, or
    /// `version()`); nil for any other line. Help on a word that is not a command is a usage error that says so
    /// (with the command it may be a typo of).
    public func answer(_ line: ParsedLine, version: () -> String) throws(UsageError) -> String? {
        if line.wantsHelp {
            if let text = helpText(for: line.helpTopic) { return text }
            throw noHelp(for: line.helpTopic ?? "")
        }
        return line.flag("--version") ? version() : nil
    }

    /// The usage error for help on `word`, which is not a command (with the command it may be a typo of).
    public func noHelp(for word: String) -> UsageError {
        UsageError(Self.withSuggestion(
            "no help for '\(word)': it is not a \(commandWord)", for: word,
            among: visibleCommands.flatMap { [$0.name] + $0.aliases }))
    }

    /// The whole help (nil topic), or one command's; nil for a word that is not a command.
    public func helpText(for topic: String?) -> String? {
        guard let topic else { return wholeHelp }
        if let command = command(named: topic) { return commandHelp(command) }
        // A group's word alone (`certs`): the help of each of its commands.
        let group = commands.filter { $0.words.count > 1 && $0.words[0] == topic }
        guard !group.isEmpty else { return nil }
        return group.map(commandHelp).joined(separator: "\n")
    }

    /// Words wrapped to `width`, every line after the first indented by `indent` spaces.
    static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        wrap(words: text.split(separator: " ", omittingEmptySubsequences: true).map(String.init), width: width,
             indent: indent)
    }

    /// A usage line wrapped between its bracketed parts, never inside one (`[--log-level debug|info]`).
    static func wrapUsage(_ text: String, width: Int, indent: Int) -> [String] {
        var words: [String] = []
        var depth = 0
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if depth > 0, let last = words.popLast() {
                words.append(last + " " + word)
            } else {
                words.append(String(word))
            }
            depth += word.filter { $0 == "[" }.count - word.filter { $0 == "]" }.count
        }
        return wrap(words: words, width: width, indent: indent)
    }

    static func wrap(words: [String], width: Int, indent: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in words {
            if !line.isEmpty, line.count + 1 + word.count > width - (lines.isEmpty ? 0 : indent) {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }

    /// Two columns: `left` padded to `column`, `right` wrapped beside it (on the next line when `left` is wider).
    static func columns(_ rows: [(String, String)], indent: Int = 2, column: Int) -> String {
        var text = ""
        let pad = String(repeating: " ", count: indent)
        for (left, right) in rows {
            let lines = wrap(right, width: width - indent - column, indent: 0)
            if left.count + 2 > column {
                text += pad + left + "\n"
                for line in lines { text += pad + String(repeating: " ", count: column) + line + "\n" }
            } else {
                for (number, line) in lines.enumerated() {
                    let head = number == 0 ? left + String(repeating: " ", count: column - left.count)
                        : String(repeating: " ", count: column)
                    text += pad + head + line + "\n"
                }
            }
        }
        return text
    }

    /// `--quiet, -q`, `--ca FILE, --cacert FILE`.
    static func names(_ option: OptionSpec) -> String {
        ([option.synopsis] + option.aliases.map { alias in
            alias.hasPrefix("--") ? (option.placeholder.map { "\(alias) \($0)" } ?? alias) : alias
        }).joined(separator: ", ")
    }

    /// The option's help with its environment variable and default: `... (env MEMO_TIMEOUT, default 10)`.
    static func describe(_ option: OptionSpec, prefix: String = "") -> String {
        var notes: [String] = []
        if let variable = option.environment { notes.append("env \(variable)") }
        if let value = option.defaultValue { notes.append("default \(value)") }
        return prefix + option.help + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")")
    }

    /// The options that apply to `command` and not to every command.
    func ownOptions(of command: String) -> [OptionSpec] {
        activeOptions.filter { $0.scope != .everywhere && $0.applies(to: command) }
    }

    /// `certs client NAME [--dir DIR] [--days N] ...`: the command, its arguments, then its own options.
    func usageLine(_ command: CommandSpec) -> String {
        let options = ownOptions(of: command.name).map { "[\($0.synopsis)\($0.repeatable ? "]..." : "]")" }
        return ([command.name] + (command.arguments.isEmpty ? [] : [command.arguments]) + options)
            .joined(separator: " ")
    }

    func commandHelp(_ command: CommandSpec) -> String {
        var usage = "usage: \(program) \(usageLine(command))"
        if !command.aliases.isEmpty { usage += "   (also: \(command.aliases.joined(separator: ", ")))" }
        let indent = "usage: \(program) \(command.name) ".count
        var text = Self.wrapUsage(usage, width: Self.width, indent: indent).enumerated().map { number, line in
            (number == 0 ? "" : String(repeating: " ", count: indent)) + line
        }.joined(separator: "\n")
        text += "\n\n" + (command.help.isEmpty ? command.summary : command.help) + "\n"
        let own = ownOptions(of: command.name)
        if !own.isEmpty {
            text += "\nOptions:\n" + Self.columns(own.map { (Self.names($0), Self.describe($0)) }, column: 22)
        }
        let everywhere = activeOptions.filter {
            $0.scope == .everywhere && $0.name != "--help" && $0.name != "--version"
        }
        if !everywhere.isEmpty {
            text += "\nOptions for every \(commandWord):\n"
                + Self.columns(everywhere.map { (Self.names($0), Self.describe($0)) }, column: 26)
        }
        return text
    }

    var wholeHelp: String {
        var text = usage + "\n\n" + introduction + "\n"
        let listed = visibleCommands
        if !listed.isEmpty {
            text += "\n\(commandWord == "mode" ? "Modes" : "Commands"):\n"
            text += Self.columns(listed.map { command in
                let also = command.aliases.isEmpty ? "" : " (also: \(command.aliases.joined(separator: ", ")))"
                return ([command.name, command.arguments].filter { !$0.isEmpty }.joined(separator: " "),
                        command.summary + also)
            }, column: 34)
        }
        let options = activeOptions
        if !options.isEmpty {
            text += "\nOptions:\n" + Self.columns(options.map { option in
                var prefix = ""
                if case .only(let commands) = option.scope, commands != [defaultCommand ?? ""] {
                    prefix = commands.map(label).joined(separator: ", ") + ": "
                }
                return (Self.names(option), Self.describe(option, prefix: prefix))
            }, column: 26)
        }
        if !environment.isEmpty {
            text += "\nEnvironment:\n" + Self.columns(environment.map { setting in
                (setting.name + (setting.choices.map { "=" + $0.joined(separator: "|") } ?? ""), setting.help)
            }, column: 26)
        }
        if !epilogue.isEmpty { text += "\n" + epilogue + (epilogue.hasSuffix("\n") ? "" : "\n") }
        return text
    }

    /// The command reference README.md shows, made from the table: the usage of each command, its options and
    /// arguments, and its summary. A test fails when README's copy differs, and prints this to paste.
    public var reference: String {
        let word = commandWord.uppercased()
        var text = defaultCommand == nil
            ? "\(program) [options] \(word) [arguments]\n" : "\(program) [\(word)] [options]\n"
        let rows = visibleCommands.map { command in
            let also = command.aliases.isEmpty ? "" : " (also: \(command.aliases.joined(separator: ", ")))"
            return (usageLine(command), command.summary + also)
        }
        let column = 36
        for (usage, summary) in rows {
            let usageLines = Self.wrapUsage(usage, width: Self.width - 2, indent: 4)
            let summaryLines = Self.wrap(summary, width: Self.width - 2 - column, indent: 0)
            let fits = usageLines.count == 1 && usage.count + 2 <= column
            for (number, line) in usageLines.enumerated() where !(fits && number == 0) {
                text += (number == 0 ? "  " : "      ") + line + "\n"
            }
            for (number, line) in summaryLines.enumerated() {
                let head = fits && number == 0 ? usage + String(repeating: " ", count: column - usage.count)
                    : String(repeating: " ", count: column)
                text += "  " + head + line + "\n"
            }
        }
        let options = activeOptions.filter { $0.scope == .everywhere && $0.name != "--help" }.map {
            "[\($0.synopsis)]"
        }
        for (number, line) in Self.wrapUsage("options: " + options.joined(separator: " "), width: Self.width, indent: 2)
            .enumerated()
        {
            text += (number == 0 ? "" : "  ") + line + "\n"
        }
        return text
    }
}

/// Prints an answer of the table (help, a version) on standard output with one final newline, and exits 0: what
/// memo-server, memo-bench and memo-torture do with `CommandTable.answer`'s text.
public func showAndExit(_ text: String) -> Never {
    print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
    exit(0)
}
