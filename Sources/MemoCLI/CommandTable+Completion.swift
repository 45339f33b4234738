// The completion scripts made from a `CommandTable`: bash (also loaded by zsh through bashcompinit, so both
// complete the same way) and fish. Each offers the commands, the options that apply to the command on the line,
// a value's choices, files or folders, and a command's first argument as the table says.

extension CommandTable {
    /// The shells `completionScript` writes for.
    public static let completionShells = ["bash", "zsh", "fish"]

    /// The script for `shell` (one of `completionShells`).
    public func completionScript(shell: String) -> String {
        switch shell {
        case "fish": fishScript
        // zsh runs the bash function through bashcompinit (compinit first if the shell has not loaded it); zsh's
        // compadd then keeps the words that match what is typed.
        case "zsh":
            "#compdef \(program)\n(( $+functions[compdef] )) || { autoload -U compinit && compinit }\n"
                + "autoload -U +X bashcompinit && bashcompinit\n" + bashScript
        default: bashScript
        }
    }

    var functionName: String { "_" + program.replacingDashes() }

    /// Single-quoted for a shell: `it's` is `'it'\''s'`.
    static func quoted(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    /// The first words of the command names (`certs` for `certs init`), and their aliases, as typed first.
    var firstWords: [String] {
        var words: [String] = []
        for command in visibleCommands {
            for word in [command.words[0]] + command.aliases where !words.contains(word) { words.append(word) }
        }
        return words
    }

    /// The visible commands of one word (what `help COMMAND` takes).
    var oneWordCommands: [String] { visibleCommands.map(\.name).filter { !$0.contains(" ") } }

    /// The commands of two words, by their first word.
    var groups: [(String, [String])] {
        var result: [(String, [String])] = []
        for command in visibleCommands where command.words.count > 1 {
            if let index = result.firstIndex(where: { $0.0 == command.words[0] }) {
                result[index].1.append(command.words[1])
            } else {
                result.append((command.words[0], [command.words[1]]))
            }
        }
        return result
    }

    /// Every spelling of the options that apply to `command` ("" for none), `--help` included.
    func spellings(for command: String) -> [String] {
        activeOptions.filter { $0.applies(to: command) }.flatMap(\.spellings)
    }

    /// A bash `compgen` call for `hint` (the current word in `$cur`), or nil when it offers nothing.
    func bashCompletion(_ hint: CompletionHint) -> String? {
        switch hint {
        case .nothing: nil
        case .files: "COMPREPLY=($(compgen -f -- \"$cur\"))"
        case .directories: "COMPREPLY=($(compgen -d -- \"$cur\"))"
        case .words(let words): "COMPREPLY=($(compgen -W \(Self.quoted(words.joined(separator: " "))) -- \"$cur\"))"
        case .commands:
            "COMPREPLY=($(compgen -W \(Self.quoted(oneWordCommands.joined(separator: " "))) -- \"$cur\"))"
        case .program(let arguments, _):
            "COMPREPLY=($(compgen -W \"$(\"$program\" \"${passing[@]}\" \(arguments.joined(separator: " ")) "
                + "2>/dev/null)\" -- \"$cur\"))"
        }
    }

    var bashScript: String {
        let valueOptions = activeOptions.filter(\.takesValue)
        let passed = Set(commands.flatMap { command -> [String] in
            if case .program(_, let passing) = command.completion { return passing }
            return []
        })
        var script = """
            # \(program) completion (bash); load with: source <(\(program) completion bash)
            \(functionName)() {
                # bash splits the line at COMP_WORDBREAKS, ':' and '=' among them, so `--server 127.0.0.1:7420`
                # arrives as three words: they are joined again where the line has no blank between them.
                local -a words=()
                local cword=0 i n=-1 rest="${COMP_LINE:-}" word trimmed
                for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
                    word="${COMP_WORDS[i]}"
                    trimmed="${rest#"${rest%%[![:space:]]*}"}"
                    if ((n < 0)) || [[ -z "${COMP_LINE:-}" || "$trimmed" != "$rest" ]]; then
                        n=$((n + 1)); words[n]="$word"
                    else
                        words[n]+="$word"
                    fi
                    rest="${trimmed#"$word"}"
                    ((i == COMP_CWORD)) && cword=$n
                done
                local cur="${words[cword]}" prev="${words[cword-1]}"
                # The program as typed, less its quotes and with ~ expanded, to ask it for words.
                local program=${words[0]//\\'/}
                program=${program//\\"/}
                [[ "$program" == "~/"* ]] && program="$HOME/${program#"~/"}"
                local command="" at=0 passing=()
                for ((i = 1; i < cword; i++)); do
                    case "${words[i]}" in
                        --) break ;;

            """
        for name in passed.sorted() {
            script += "                \(name)) passing+=(\(name) \"${words[i+1]}\"); ((i++)) ;;\n"
            script += "                \(name)=*) passing+=(\"${words[i]}\") ;;\n"
        }
        let skipped = valueOptions.flatMap(\.spellings).filter { !passed.contains($0) }
        if !skipped.isEmpty { script += "                \(skipped.joined(separator: "|"))) ((i++)) ;;\n" }
        let groupWords = groups.map(\.0)
        script += "                -*) ;;\n"
        if groupWords.isEmpty {
            script += "                *) command=\"${words[i]}\"; at=$i; break ;;\n"
        } else {
            script += """
                                *)
                                    if [[ -z "$command" ]]; then
                                        command="${words[i]}"; at=$i
                                        case "$command" in \(groupWords.joined(separator: "|"))) ;; *) break ;; esac
                                    else
                                        command+=" ${words[i]}"; at=$i; break
                                    fi ;;

                """
        }
        script += "        esac\n    done\n"
        // `--option=VALUE` being typed: its value is completed as after `--option VALUE`.
        let longValueOptions = valueOptions.flatMap(\.spellings).filter { $0.hasPrefix("--") }
        if !longValueOptions.isEmpty {
            script += "    case \"$cur\" in\n"
            script += "        \(longValueOptions.map { "\($0)=*" }.joined(separator: "|"))) prev=\"${cur%%=*}\"; "
                + "cur=\"${cur#*=}\" ;;\n"
            script += "    esac\n"
        }
        script += "    case \"$prev\" in\n"
        for option in valueOptions {
            let action = bashCompletion(option.completion) ?? "COMPREPLY=()"
            script += "        \(option.spellings.joined(separator: "|"))) \(action); return ;;\n"
        }
        script += "    esac\n"
        // The options that apply to the command on the line.
        script += "    local options\n    case \"$command\" in\n"
        for command in visibleCommands {
            let names = ([command.name] + command.aliases).map { $0.contains(" ") ? Self.quoted($0) : $0 }
            let options = Self.quoted(spellings(for: command.name).joined(separator: " "))
            script += "        \(names.joined(separator: "|"))) options=\(options) ;;\n"
        }
        script += "        *) options=\(Self.quoted(spellings(for: defaultCommand ?? "").joined(separator: " "))) ;;\n"
        script += "    esac\n"
        script += """
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=($(compgen -W "$options" -- "$cur"))
                elif [[ -z "$command" ]]; then
                    COMPREPLY=($(compgen -W \(Self.quoted(firstWords.joined(separator: " "))) -- "$cur"))
                elif ((cword == at + 1)); then
                    case "$command" in

            """
        for (group, subs) in groups {
            let words = Self.quoted(subs.joined(separator: " "))
            script += "            \(group)) COMPREPLY=($(compgen -W \(words) -- \"$cur\")) ;;\n"
        }
        for command in visibleCommands {
            guard let action = bashCompletion(command.completion) else { continue }
            let names = ([command.name] + command.aliases).map { $0.contains(" ") ? Self.quoted($0) : $0 }
            script += "            \(names.joined(separator: "|"))) \(action) ;;\n"
        }
        script += """
                        *) COMPREPLY=() ;;
                    esac
                else
                    COMPREPLY=()
                fi
                # What bash replaces is only the part of the word after its last break: leave out what came before.
                local before="${cur%"${COMP_WORDS[COMP_CWORD]}"}"
                if [[ -n "$before" && "$before" != "$cur" ]]; then
                    COMPREPLY=("${COMPREPLY[@]#"$before"}")
                fi
            }
            complete -F \(functionName) \(program)

            """
        return script
    }

    /// The first sentence of `text`, for a fish description.
    static func shortDescription(_ text: String) -> String {
        var first = text.split(separator: ";", maxSplits: 1).first.map(String.init) ?? text
        let characters = Array(first)
        let sentenceEnd = characters.indices.dropLast().first { characters[$0] == "." && characters[$0 + 1] == " " }
        if let stop = sentenceEnd {
            first = String(characters[..<stop])
        }
        if first.count > 70 { first = String(first.prefix(67)) + "..." }
        return first
    }

    func fishArguments(_ hint: CompletionHint) -> String {
        switch hint {
        case .nothing: " -x"
        case .files: " -r -F"
        case .directories: " -x -a '(__fish_complete_directories)'"
        case .words(let words): " -x -a " + Self.quoted(words.joined(separator: " "))
        case .commands:
            " -x -a " + Self.quoted(oneWordCommands.joined(separator: " "))
        case .program: " -x -a '(\(functionName)_words)'"
        }
    }

    var fishScript: String {
        let c = "complete -c \(program)"
        var script = "# \(program) completion (fish); load with: \(program) completion fish | source\n"
        script += "\(c) -f\n"
        // The words a command line's first argument may be, and after them the options each command takes.
        let typed = firstWords.joined(separator: " ")
        for command in visibleCommands {
            let word = command.words[0]
            guard command.words.count == 1 else { continue }
            for name in [word] + command.aliases {
                let description = Self.quoted(Self.shortDescription(command.summary))
                script += "\(c) -n 'not __fish_seen_subcommand_from \(typed)' -a \(name) -d \(description)\n"
            }
        }
        for (group, subs) in groups {
            script += "\(c) -n 'not __fish_seen_subcommand_from \(typed)' -a \(group)\n"
            for sub in subs {
                let summary = command(named: "\(group) \(sub)")?.summary ?? ""
                let condition = "__fish_seen_subcommand_from \(group); and not __fish_seen_subcommand_from "
                    + subs.joined(separator: " ")
                let description = Self.quoted(Self.shortDescription(summary))
                script += "\(c) -n '\(condition)' -a \(sub) -d \(description)\n"
            }
        }
        for option in activeOptions {
            var line = c
            for spelling in option.spellings {
                line += spelling.hasPrefix("--") ? " -l \(spelling.dropFirst(2))" : " -s \(spelling.dropFirst())"
            }
            if case .only(let commands) = option.scope {
                let words = commands.flatMap { name -> [String] in
                    guard let command = command(named: name) else { return [] }
                    return [command.words.last!] + command.aliases
                }
                if !words.isEmpty { line += " -n '__fish_seen_subcommand_from \(words.joined(separator: " "))'" }
            }
            if option.takesValue { line += fishArguments(option.completion) }
            script += line + " -d \(Self.quoted(Self.shortDescription(option.help)))\n"
        }
        for command in visibleCommands where command.completion != .nothing {
            let words = ([command.words.last!] + command.aliases).joined(separator: " ")
            script += "\(c) -n '__fish_seen_subcommand_from \(words)'\(fishArguments(command.completion))\n"
        }
        // The words a command's argument is completed from, asked of the program itself with the options it needs.
        if let (arguments, passing) = commands.lazy.compactMap({ command -> ([String], [String])? in
            if case .program(let arguments, let passing) = command.completion { return (arguments, passing) }
            return nil
        }).first {
            let fishCases = passing.map { option in
                "            case \(option)\n                set -a passing \(option) $tokens[(math $i + 1)]\n"
                    + "            case '\(option)=*'\n                set -a passing $tokens[$i]"
            }.joined(separator: "\n")
            script += """
                function \(functionName)_words
                    set -l tokens (commandline -opc)
                    set -l passing
                    for i in (seq 2 (count $tokens))
                        switch $tokens[$i]
                \(fishCases)
                        end
                    end
                    command -q $tokens[1]; or return
                    $tokens[1] $passing \(arguments.joined(separator: " ")) 2>/dev/null
                end

                """
        }
        return script
    }
}

extension String {
    func replacingDashes() -> String { String(map { $0 == "-" ? "_" : $0 }) }
}
