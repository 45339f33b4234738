// The parser made from a `CommandTable`: every check that needs only the table (an unknown option or command,
// a missing value, a bad choice, an option given twice, an option for another command) is made here, each a
// one-line `UsageError`; what a value means (a number, a UUID, an address) is the program's to check.

/// A command line read against its table.
public struct ParsedLine: Sendable {
    /// The command named (canonical), or the table's default command; nil when there is none.
    public let command: CommandSpec?
    /// `--help` or `-h` was given (before `--`): the rest of the line is not checked.
    public let wantsHelp: Bool
    /// The command words typed on a line that asked for help, as typed (`bogus` too), nil when none.
    public let helpTopic: String?
    /// The values of each option given, by its name (a flag has one empty value per time it is given).
    public let given: [String: [String]]
    /// The arguments after the command's words, in order (those after `--` included).
    public let positionals: [String]

    /// `command?.name`, or "" for the line without a command.
    public var commandName: String { command?.name ?? "" }

    public func flag(_ name: String) -> Bool { given[name] != nil }

    public func values(_ name: String) -> [String] { given[name] ?? [] }

    /// The value of an option given at most once (the parser has refused it twice).
    public func value(_ name: String) -> String? { given[name]?.last }

    /// The same line as an `Arguments` reader, every option under its own name, the positionals after `--`: for
    /// code that reads its options one by one (and whose `finish` then has nothing left to refuse).
    public var arguments: Arguments {
        var items: [String] = []
        for (name, values) in given.sorted(by: { $0.key < $1.key }) {
            for value in values {
                items.append(value.isEmpty && !valueOptions.contains(name) ? name : "\(name)=\(value)")
            }
        }
        return Arguments(items + ["--"] + positionals)
    }

    /// Names of the given options that take a value (an empty value is still a value).
    let valueOptions: Set<String>
}

/// Where a setting came from: the option (`--timeout`) or its environment variable (`MEMO_TIMEOUT`).
public struct Setting: Sendable, Equatable {
    public let value: String
    public let source: String
}

extension ParsedLine {
    /// An option's value, else its environment variable's (unset or empty: none), else nil; a choice from the
    /// environment is checked as the option's value is.
    public func setting(
        _ option: OptionSpec, environment: [String: String]
    ) throws(UsageError) -> Setting? {
        if let value = value(option.name) { return Setting(value: value, source: option.name) }
        guard let variable = option.environment, let value = environment[variable], !value.isEmpty else { return nil }
        if case .choice(let words) = option.kind, !words.contains(value) {
            throw UsageError("\(variable) takes \(CommandTable.either(words)), not '\(value)'")
        }
        return Setting(value: value, source: variable)
    }
}

extension CommandTable {
    /// "a", "a or b", "a, b or c".
    static func either(_ words: [String], conjunction: String = "or") -> String {
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " \(conjunction) " + words.last!
    }

    /// What help and messages call a command: its name, or the table's words for the line without one.
    func label(_ command: String) -> String {
        command.isEmpty ? (noCommandName ?? "no \(commandWord)") : command
    }

    /// The closest of `candidates` to `word`, when close enough to be a typo (one edit in a short word, two in a
    /// longer one; a swap of two neighbours is one edit). Ties go to the one declared first.
    public static func suggestion(for word: String, among candidates: [String]) -> String? {
        let limit = word.count >= 6 ? 2 : 1
        var best: (String, Int)?
        for candidate in candidates where candidate != word {
            let distance = editDistance(word, candidate)
            if distance <= limit, distance < (best?.1 ?? Int.max) { best = (candidate, distance) }
        }
        return best?.0
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// `message`, with "; did you mean 'X'?" when a candidate is one typo away.
    static func withSuggestion(_ message: String, for word: String, among candidates: [String]) -> String {
        guard let near = suggestion(for: word, among: candidates) else { return message }
        return "\(message); did you mean '\(near)'?"
    }

    /// The long spellings an unknown option may be a typo of.
    var optionSpellings: [String] { activeOptions.flatMap(\.spellings).filter { $0.hasPrefix("--") } }

    /// Reads `argv` (the arguments after the program's name). Options may come anywhere before `--`, in the
    /// forms `--name VALUE`, `--name=VALUE` and `--flag`; `-` alone is an argument (standard input).
    public func parse(_ argv: [String]) throws(UsageError) -> ParsedLine {
        var given: [String: [String]] = [:]
        var valueOptions: Set<String> = []
        var words: [String] = []
        var firstError: UsageError?
        var wantsHelp = false
        func fail(_ message: String) { if firstError == nil { firstError = UsageError(message) } }

        var index = 0
        var optionsEnded = false
        while index < argv.count {
            let item = argv[index]
            index += 1
            if optionsEnded || !item.hasPrefix("-") || item == "-" {
                words.append(item)
                continue
            }
            if item == "--" {
                optionsEnded = true
                continue
            }
            let (spelling, inline): (String, String?) = {
                if item.hasPrefix("--") {
                    guard let equals = item.firstIndex(of: "=") else { return (item, nil) }
                    return (String(item[..<equals]), String(item[item.index(after: equals)...]))
                }
                // A short option's value may be attached, as getopt takes it (`-otsv`), or after `=` (`-o=tsv`).
                let short = String(item.prefix(2))
                guard item.count > 2, option(named: short)?.takesValue == true else { return (item, nil) }
                let rest = item.dropFirst(2)
                return (short, String(rest.first == "=" ? rest.dropFirst() : rest))
            }()
            guard let option = option(named: spelling) else {
                fail(Self.withSuggestion("unknown option \(spelling)", for: spelling, among: optionSpellings))
                continue
            }
            if option.name == "--help" {
                wantsHelp = true
                continue
            }
            var value = ""
            if option.takesValue {
                if let inline {
                    value = inline
                } else if index < argv.count {
                    value = argv[index]
                    index += 1
                } else {
                    fail("\(option.name) needs a value")
                    continue
                }
                if case .choice(let choices) = option.kind, !choices.contains(value) {
                    fail("\(option.name) takes \(Self.either(choices)), not '\(value)'")
                }
                valueOptions.insert(option.name)
            } else if inline != nil {
                fail("\(option.name) takes no value")
            }
            given[option.name, default: []].append(value)
        }

        // The command: the first word, or the first two for a command of two words (`certs init`).
        var command: CommandSpec?
        var commandWords = 0
        var unknownCommand: String?
        if !commands.isEmpty, let first = words.first {
            let groups = commands.filter { $0.words.count > 1 && $0.words[0] == first }
            if !groups.isEmpty {
                if words.count > 1, let sub = groups.first(where: { $0.words[1] == words[1] }) {
                    command = sub
                    commandWords = 2
                } else if words.count > 1 {
                    unknownCommand = "\(first) \(words[1])"
                    fail(Self.withSuggestion(
                        "unknown \(first) \(commandWord) '\(words[1])'", for: words[1],
                        among: groups.filter { !$0.hidden }.map { $0.words[1] }))
                } else {
                    unknownCommand = first
                    let words = groups.filter { !$0.hidden }.map { $0.words[1] }
                    fail("\(first) needs a \(commandWord): " + Self.either(words))
                }
            } else if let found = self.command(named: first) {
                command = found
                commandWords = 1
            } else {
                unknownCommand = first
                let names = commands.filter { !$0.hidden }.flatMap { [$0.words[0]] + $0.aliases }
                fail(Self.withSuggestion("unknown \(commandWord) '\(first)'", for: first, among: names))
            }
        }
        let helpTopic = command.map { _ in words.prefix(commandWords).joined(separator: " ") } ?? unknownCommand
        if command == nil, unknownCommand == nil, let defaultCommand { command = self.command(named: defaultCommand) }

        if wantsHelp {
            return ParsedLine(
                command: command, wantsHelp: true, helpTopic: helpTopic, given: given,
                positionals: Array(words.dropFirst(commandWords)), valueOptions: valueOptions)
        }
        if let firstError { throw firstError }

        // Each option given must be one for this command; twice only when it may be repeated.
        let commandName = command?.name ?? ""
        for option in activeOptions {
            guard let values = given[option.name] else { continue }
            if case .only(let commands) = option.scope, !commands.contains(commandName) {
                throw UsageError(
                    "\(option.name) is only for " + Self.either(commands.map(label), conjunction: "and"))
            }
            if values.count > 1, !option.repeatable {
                let also = option.aliases.filter { $0.hasPrefix("--") }
                let named = also.isEmpty ? option.name : "\(option.name) (or \(also.joined(separator: ", ")))"
                throw UsageError("\(named) is given \(values.count) times")
            }
        }
        return ParsedLine(
            command: command, wantsHelp: false, helpTopic: nil, given: given,
            positionals: Array(words.dropFirst(commandWords)), valueOptions: valueOptions)
    }
}
