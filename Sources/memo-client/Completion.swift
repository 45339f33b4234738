import Foundation
import MemoClient
import MemoCore

/// `memo-client completion bash|zsh`: a script that completes commands, options and memo ids. The ids come from
/// the mirror cache the terminal front end keeps (`memo-client completion ids`), so completing never connects.
enum Completion {
    static let commands = "list ls show get add new edit rm delete watch status export import whoami config "
        + "completion help"
    static let options = "--server --certs --ca --cacert --cert --key --timeout --keepalive --json --filter --limit "
        + "--if-revision --allow-empty --locale --version --help --id --quiet --since --max-errors --dry-run "
        + "--after -o --output --context"

    /// The ids in the mirror cache of `server`, newest first; none when there is no cache or it is damaged.
    static func cachedIDs(server: String) -> [String] {
        guard let cached = try? MirrorCache.load(from: MirrorCache.defaultPath(server: server)) else { return [] }
        return cached.memos.map { $0.id.uuidString.lowercased() }
    }

    static func script(shell: String) -> String {
        // zsh runs the bash function through bashcompinit, so that both shells complete the same way (zsh's
        // compadd then keeps the words that match what is typed); compinit first if the shell has not loaded it.
        shell == "zsh"
            ? "#compdef memo-client\n(( $+functions[compdef] )) || { autoload -U compinit && compinit }\n"
                + "autoload -U +X bashcompinit && bashcompinit\n" + bash
            : bash
    }

    static let bash = """
        # memo-client completion (bash); load with: source <(memo-client completion bash)
        _memo_client() {
            local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
            local commands="\(commands)"
            local options="\(options)"
            local i command="" at=0 server=()
            for ((i = 1; i < COMP_CWORD; i++)); do
                case "${COMP_WORDS[i]}" in
                    --) break ;;
                    --server) server=(--server "${COMP_WORDS[i+1]}"); ((i++)) ;;
                    --certs|--ca|--cacert|--cert|--key|--timeout|--keepalive|--filter|--limit|--if-revision|--locale)
                        ((i++)) ;;
                    --after|-o|--output|--context) ((i++)) ;;
                    -*) ;;
                    *) command="${COMP_WORDS[i]}"; at=$i; break ;;
                esac
            done
            case "$prev" in
                --certs) COMPREPLY=($(compgen -d -- "$cur")); return ;;
                --ca|--cacert|--cert|--key) COMPREPLY=($(compgen -f -- "$cur")); return ;;
                -o|--output) COMPREPLY=($(compgen -W "json tsv ids wide" -- "$cur")); return ;;
                --context)
                    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" config contexts -o ids 2>/dev/null)" \\
                        -- "$cur")); return ;;
                --server|--timeout|--keepalive|--filter|--limit|--if-revision|--locale|--after) COMPREPLY=(); return ;;
            esac
            if [[ "$cur" == -* ]]; then
                COMPREPLY=($(compgen -W "$options" -- "$cur"))
            elif [[ -z "$command" ]]; then
                COMPREPLY=($(compgen -W "$commands" -- "$cur"))
            elif ((COMP_CWORD == at + 1)); then
                case "$command" in
                    show|get|edit|rm|delete)
                        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" "${server[@]}" completion ids 2>/dev/null)" \\
                            -- "$cur")) ;;
                    import) COMPREPLY=($(compgen -f -- "$cur")) ;;
                    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
                    config) COMPREPLY=($(compgen -W "contexts" -- "$cur")) ;;
                    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
                    *) COMPREPLY=() ;;
                esac
            else
                COMPREPLY=()
            fi
        }
        complete -F _memo_client memo-client

        """
}
