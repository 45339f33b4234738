import MemoCLI
import MemoClient

// memo-client's command line, declared once: `Invocation.parse` reads it, `memo-client --help` and
// `COMMAND --help` print it, and `completion bash|zsh|fish` writes it out. README's command reference is checked
// against it (CommandTableTests).

/// memo-client's commands and options.
public enum ClientCommandTable {
    /// The commands that write (and take --quiet).
    static let writes = ["add", "edit", "rm", "import"]

    public static let table = CommandTable(
        program: "memo-client",
        noCommandName: "the terminal front end (no command)",
        usage: """
            usage: memo-client [options] COMMAND [arguments]
                   memo-client [options] [--locale ID]       (on a terminal: the interactive front end)
                   memo-client COMMAND --help | memo-client --version
            """,
        introduction: """
            Reads and writes the memos of a memo server over mutual TLS. With no command, on a terminal, it opens
            the terminal front end: the list, live as other clients change it, a detail and an editor (? shows the
            keys). It starts from the cached list when the server is away and says so in the status bar; writes
            made meanwhile show at once as pending and are sent when the server is back.
            """,
        commands: commands, options: options, environment: environment, epilogue: epilogue)

    static let ids = CompletionHint.program(arguments: ["completion", "ids"], passing: ["--server"])

    static let commands: [CommandSpec] = [
        CommandSpec(
            "list", aliases: ["ls"],
            summary: "memos, newest first; with --limit or --after a page served by the server, then the next "
                + "page's cursor",
            help: """
                Memos, newest first: id<TAB>revision<TAB>insertDate<TAB>first line (a table on a terminal).
                With --limit or --after the list is paged by the server (protocol version 2) and the next page's
                cursor follows it: with --json a last line {"next":"CURSOR"} ({"next":null} at the end of the
                list); otherwise next<TAB>CURSOR on stderr, nothing at the end. CURSOR names a place in the list
                (an insert date and an id), not a memo: it stays valid when that memo is deleted.
                """),
        CommandSpec(
            "show", aliases: ["get"], arguments: "ID", completion: ids, summary: "one memo, all of its content",
            help: """
                One memo, all of its content as stored. ID may be any unique prefix of the id. Piped (stdout not a
                terminal) it prints the content's bytes and exactly one newline, so that show ID | edit ID - (which
                drops one final newline) gives back the same bytes.
                """),
        CommandSpec(
            "add", aliases: ["new"], arguments: "TEXT... | -",
            summary: "a new memo (the words joined by spaces); add - reads stdin",
            help: """
                A new memo: the words joined by spaces, or all of stdin (less one final newline) with -.
                Prints id<TAB>revision<TAB>insertDate<TAB>first line. Content is at most 65536 bytes (UTF-8); more is
                refused before anything is sent (exit 1; stdin is read no further than that). Text that is not
                UTF-8, in an argument or on stdin, is refused (exit 1). Empty content is refused (exit 1) unless
                --allow-empty. Use -- before text that starts with a dash: memo-client add -- -5 degrees.
                The id is chosen here (or given with --id): a create whose answer is lost (or answered
                outcome-unknown) is sent again with the same id until --timeout; the memo coming back unchanged is
                success. Still unknown: exit 7.
                """),
        CommandSpec(
            "edit", arguments: "ID TEXT... | ID -", completion: ids,
            summary: "replace a memo's content (edit ID - reads stdin)",
            help: """
                Replaces a memo's content (the words joined by spaces, or stdin with -).
                Without --if-revision the memo's current revision is read first and sent as the expected one (read
                again if another writer moves it meanwhile: the last writer wins). An update whose answer is lost
                (or answered outcome-unknown) is sent again with that revision until --timeout; a conflict whose
                memo holds our text means the first try did it (exit 0). Still unknown: exit 7.
                --if-revision N alone is a strict compare-and-swap. With --merge as well, a memo moved on since N
                is not a conflict when the lines changed since and ours neither overlap nor touch: the server merges
                them, like git merge, against version N (which it keeps, see log) and prints the merged memo.
                Overlapping or adjacent edits, or version N no longer kept, are still the conflict (exit 4).
                """),
        CommandSpec(
            "rm", aliases: ["delete"], arguments: "ID", completion: ids, summary: "delete a memo",
            help: """
                Deletes a memo and prints it as it was.
                A delete whose answer is lost (or answered outcome-unknown) is sent again until --timeout; finding
                nothing then means the first try did it (exit 0). Still unknown: exit 7.
                """),
        CommandSpec(
            "log", arguments: "ID", completion: ids, summary: "a memo's versions, newest first, with their authors",
            help: """
                The memo's kept versions (the server keeps each memo's last --versions, default 50, and a deleted
                memo's in the trash), newest first, at most --limit (default 50; --all: every one), older than
                --before REVISION when given, in one request when they fit in one answer (else page after page):
                revision<TAB>date<TAB>author<TAB>kind<TAB>first line, kind create, update or restore, author the
                certificate's name (- when not known). --json: one array of {"revision":N,"kind":"…","date":"…",
                "author":{"name":"…","serial":"…"},"content":"…"}. ID may be a unique prefix of a live memo's id, or
                the whole id of a memo in the trash. An id the server knows nothing of: exit 3. To page, give the
                revision of the last version printed as --before; an empty page (nothing printed, or []) is the end.
                """),
        CommandSpec(
            "restore", arguments: "ID", completion: ids,
            summary: "make a memo's content one of its versions again, or bring a deleted memo back",
            help: """
                For a live memo: --revision R (a version memo-client log lists) becomes its content again, as an
                update by this certificate (kind restore); without --revision it is a usage error (exit 2). For a
                memo in the trash (memo-client trash): brings it back under its id with its last content, or version
                R's with --revision. --expect R: only if the memo is still at revision R (for a memo in the trash:
                the revision of its delete), else exit 4. Prints the memo as show does. A version no longer kept or
                a memo not in the trash (purged): exit 3 with the reason. A read-only certificate: exit 5.
                """),
        CommandSpec(
            "trash", summary: "deleted memos, newest delete first",
            help: """
                The memos in the trash (kept --trash-days days by the server, default 30), newest delete first, at
                most --limit (default 50; --all: every one), deleted before --before REVISION when given:
                id<TAB>revision<TAB>deletedDate<TAB>deleted by<TAB>first line, the revision and date of the delete.
                --json: one array of {"id":"…","revision":N,"deletedDate":"…","deletedBy":{"name":"…","serial":"…"},
                "insertDate":"…","content":"…"}. To page, give the revision of the last line printed as --before;
                an empty page is the end. memo-client restore ID brings one back.
                """),
        CommandSpec(
            "watch",
            summary: "the list, then one line per change as it happens; resumes across server restarts with no gap "
                + "and no repeat, except across an explicit resync (then the whole list again)",
            help: """
                Prints every memo as an `existing` line, then one line per change as it happens, all in one shape:
                  existing|created|updated|deleted<TAB>id<TAB>revision<TAB>date<TAB>first line
                where date is the memo's updateDate (for deleted, the time of the delete). With --json:
                  {"type":"existing"|"created"|"updated"|"deleted","revision":N,"memo":{...}}
                Resumes across server restarts and reconnects: the changes come in revision order, each once, with
                no gap, except across a resync. When the server no longer holds the changes missed while away
                (history-gone), watch prints a resync line, then the whole list again as existing lines, and goes
                on from there (never a made-up diff):
                  resync<TAB>N            (--json: {"event":"resync","revision":N})
                N is the revision of the list that follows. Ctrl-C stops. Ends (exit 0) as soon as its reader
                goes away (watch | head -3). Says on stderr, one line each, when the connection is lost
                (connection lost (REASON); reconnecting) and back (reconnected to SERVER at revision N).
                """),
        CommandSpec(
            "status",
            summary: "how each server is doing: one row per --server address; exit 8 when one is not ready",
            help: """
                How each server is doing, each asked on a connection of its own (with several --server
                addresses, one row per server, in the order given; a server that cannot be reached is a row
                saying why). Columns: SERVER, STATUS (ready, not-ready, unreachable), REVISION, MEMOS,
                CONNECTIONS, SUBSCRIBERS, LAG (PostgreSQL: revisions behind the database as far as the server
                knows, and seconds since its feed last caught up; - otherwise), STORE, UPTIME, DETAIL (why not
                ready, or why unreachable). A table with a header on a terminal, tab-separated without one
                otherwise. With --json: one object per line, one line per server:
                  {"server":S,"reachable":true,"ready":B,"reason":null|S,"fields":{NAME:VALUE,...}}
                with every value the server reports (PROTOCOL.md, Status), null where it does not apply.
                Exit 0 when every server is ready, 6 (or 5) when one cannot be reached, else 8 when one is not
                ready.
                """),
        CommandSpec(
            "export", summary: "every memo as JSON lines (lossless); --versions: with their kept versions",
            help: """
                Every memo as one JSON object per line (id, content, insertDate, updateDate, revision, author: the
                certificate that made its last change, {"name":"…","serial":"…"}, both empty when not known). With
                --versions each object also has "versions": the memo's kept versions, newest first, as log --json
                prints them (one history request per memo). The authors and dates in the file are a record: import
                cannot give them back (the server takes authors from the certificate only).
                """),
        CommandSpec(
            "import", arguments: "FILE | -", completion: .files,
            summary: "memos from export output; importing a file twice changes nothing",
            help: """
                Memos from export output, read line by line from FILE (any readable path: a file, a pipe,
                /dev/stdin, <(command)) or stdin with -. Importing the same lines twice changes nothing.
                Prints created N<TAB>unchanged N<TAB>conflicts N<TAB>invalid N<TAB>failed N, then <TAB>unknown N
                when N creates were still of unknown outcome at --timeout (each is retried by its id until then;
                exit 7 unless there are conflicts), however it ends: also when the connection fails (then that
                failure's exit code) or on Ctrl-C (exit 130). Bad lines are reported in line order. A read-only
                certificate stops the import at once (exit 5). On a terminal, stderr shows a progress line (lines,
                lines/s, and for a file %, eta).
                A line with "versions" (export --versions) whose memo is not on the server is replayed: created with
                the oldest version's content and its insertDate, then updated to each later version's content in
                order, each update expecting the revision the one before got; the memo's history then holds those
                contents, made by the importing certificate at the time of the import. A memo already there is
                unchanged when its content is the line's, else a conflict (nothing replayed).
                """),
        CommandSpec(
            "whoami", summary: "the client certificate: name, role, serial, issuer, expiry",
            help: """
                The certificate this client would present (--cert, MEMO_CERT or the certificates folder's
                client.crt), read locally without connecting: name (CN), role (read-write or read-only), serial,
                issuer (the CA's CN), notBefore, notAfter (UTC), daysLeft and the certificate's path, as
                field<TAB>value lines; with --json one object with those fields and warning (text or null).
                Within 30 days of notAfter it warns on stderr; every other command gives that warning too, at
                most once a day (the day is kept in $XDG_CACHE_HOME/memo/certificate-warnings), unless
                MEMO_EXPIRY_WARNING=0.
                """),
        CommandSpec(
            "config contexts",
            summary: "the contexts of ~/.config/memo/config, the one in effect marked (read locally)",
            help: """
                The contexts of $XDG_CONFIG_HOME/memo/config (~/.config/memo/config), in the file's order:
                CURRENT<TAB>NAME<TAB>SERVER, CURRENT being * for the context in effect (--context, MEMO_CONTEXT or
                the file's current line) and empty for the others, SERVER - when the context names none; aligned
                on a terminal. With --json one object per context: name, current, server, ca, cert, key; with
                -o ids the names only.
                The file is KEY VALUE lines (# starts a comment; indentation is free):
                  current work                      the context used when none is named
                  context work                      starts context work; the lines below belong to it
                    server a.example,b.example      its --server
                    ca ca.crt                       its --ca, --cert and --key: a relative path is relative
                    cert client.crt                 to the config file's folder, ~/ is the home folder
                    key client.key
                A value given on the command line or in the environment wins over the context's: --server and
                MEMO_SERVER over server; --ca, --cert, --key and MEMO_CA, MEMO_CERT, MEMO_KEY over each file, and
                --certs or MEMO_CERTS over all three. A file that breaks these rules is an error naming its line
                (exit 2); so is a context the file does not define (the message lists those it does).
                """),
        CommandSpec(
            "completion", arguments: "bash|zsh|fish", completion: .words(CommandTable.completionShells),
            summary: "a shell completion script (commands, options, cached memo ids)",
            help: """
                Prints a completion script for commands, options and memo ids (from the mirror cache the terminal
                front end keeps). For bash: source <(memo-client completion bash); for zsh: source <(memo-client
                completion zsh); for fish: memo-client completion fish | source.
                """),
        CommandSpec(
            "help", arguments: "[COMMAND]", completion: .commands,
            summary: "this help, or one command's (also: COMMAND --help)",
            help: """
                The help of one command, or the whole help.
                """),
    ]

    static let options: [OptionSpec] = [
        OptionSpec(
            "--server", .value("HOST[:PORT]"), default: "127.0.0.1:7420", environment: "MEMO_SERVER",
            help: "the server; the port defaults to 7420; IPv6 as [::1] or [::1]:7420; several, separated by "
                + "commas (servers over one PostgreSQL), are tried in turn when one is lost"),
        OptionSpec(
            "--certs", .value("DIR"), environment: "MEMO_CERTS", completion: .directories,
            help: "folder with ca.crt, client.crt and client.key; default ./certs if it exists, else "
                + "$XDG_CONFIG_HOME/memo/certs, i.e. ~/.config/memo/certs"),
        OptionSpec(
            "--ca", aliases: ["--cacert"], .value("FILE"), environment: "MEMO_CA", completion: .files,
            help: "the CA that signed the server's certificate (instead of DIR/ca.crt)"),
        OptionSpec(
            "--cert", .value("FILE"), environment: "MEMO_CERT", completion: .files,
            help: "our client certificate (instead of DIR/client.crt)"),
        OptionSpec(
            "--key", .value("FILE"), environment: "MEMO_KEY", completion: .files,
            help: "its private key (instead of DIR/client.key)"),
        OptionSpec(
            "--timeout", .value("SECONDS"), default: "10", environment: "MEMO_TIMEOUT",
            help: "how long a request may take, connecting included; a refused connection is retried with backoff "
                + "until then, and so is a write of unknown outcome (sent, and its answer lost)"),
        OptionSpec(
            "--keepalive", .value("SECONDS"), default: "3; 0: off", environment: "MEMO_KEEPALIVE",
            help: "ping a connection silent this long; no answer within as long again is a lost connection, made "
                + "again (on the next --server address)"),
        OptionSpec(
            "--context", .value("NAME"), default: "the config file's current line", environment: "MEMO_CONTEXT",
            completion: .program(arguments: ["config", "contexts", "-o", "ids"], passing: []),
            help: "the server and ca, cert and key files of context NAME in ~/.config/memo/config; the options "
                + "and variables above win over it (memo-client config contexts --help: the file's format)"),
        OptionSpec(
            "--output", aliases: ["-o"], .choice(["json", "tsv", "ids", "wide"]),
            help: "json (as --json), tsv (the tab-separated lines below, even on a terminal; show: the memo's list "
                + "line), ids (one id per line) or wide (id, revision, insertDate, updateDate, size in bytes, "
                + "author, first line; tab-separated); ids and wide: list, show, add, edit and rm only"),
        OptionSpec(
            "--json",
            help: "one JSON object per memo per line: id, content, insertDate, updateDate (ISO 8601, UTC, "
                + "microseconds), revision (list, show, add, edit, rm: then author {name, serial}); watch --json prints {\"type\":\"existing\"|\"created\"|\"updated\"|"
                + "\"deleted\",\"revision\":N,\"memo\":{...}} or {\"event\":\"resync\",\"revision\":N}"),
        OptionSpec(
            "--filter", .value("TEXT"), scope: .only(["list"]),
            help: "only memos whose content contains TEXT (case-insensitive)"),
        OptionSpec(
            "--limit", .value("N"), scope: .only(["list", "log", "trash"]),
            help: "at most N memos (1 or more), read from the server a page at a time; log and trash: at most N "
                + "versions or deleted memos (default 50)"),
        OptionSpec(
            "--before", .value("REVISION"), scope: .only(["log", "trash"]),
            help: "only the versions (log) or deletes (trash) older than REVISION: the next page starts before the "
                + "revision of the last line (or JSON object) printed"),
        OptionSpec(
            "--all", scope: .only(["log", "trash"]),
            help: "every version (log) or deleted memo (trash), page after page, instead of at most --limit"),
        OptionSpec(
            "--after", .value("CURSOR"), scope: .only(["list"]),
            help: "the memos listed after CURSOR, which a paged list printed (next<TAB>CURSOR, or the JSON next)"),
        OptionSpec(
            "--id", .value("UUID"), scope: .only(["add"]),
            help: "create it with this id, idempotently: the same id and content again change nothing (exit 0); "
                + "the same id with other content is a conflict (exit 4)"),
        OptionSpec(
            "--if-revision", .value("N"), scope: .only(["edit", "rm"]),
            help: "only if the memo is still at revision N (else exit 4, conflict)"),
        OptionSpec(
            "--patch", scope: .only(["log"]),
            help: "after each version, its difference from the version before as diff -u prints it (--- rOLD, "
                + "+++ rNEW; the oldest kept against --- /dev/null), then an empty line; --json: a \"patch\" field"),
        OptionSpec(
            "--versions", scope: .only(["export"]),
            help: "each memo with \"versions\": its kept versions, newest first, as log --json prints them; import "
                + "replays them (below)"),
        OptionSpec(
            "--revision", .value("R"), scope: .only(["restore"]),
            help: "the version to restore (its revision, as memo-client log prints it)"),
        OptionSpec(
            "--expect", .value("R"), scope: .only(["restore"]),
            help: "only if the memo is still at revision R (a memo in the trash: its delete's), else exit 4"),
        OptionSpec(
            "--merge", scope: .only(["edit"]),
            help: "with --if-revision N: merge with the lines changed since N instead of a conflict (the server "
                + "merges like git; overlapping or adjacent edits still exit 4)"),
        OptionSpec(
            "--allow-empty", scope: .only(["add", "edit"]), help: "allow empty content (refused by default, exit 1)"),
        OptionSpec("--quiet", aliases: ["-q"], scope: .only(writes), help: "print nothing on success"),
        OptionSpec(
            "--since", .value("REVISION"), scope: .only(["watch"]),
            help: "no list: only the changes after REVISION (exit 1 when the server no longer holds them, or "
                + "REVISION is ahead of it)"),
        OptionSpec(
            "--max-errors", .value("N"), default: "100; 0: never", scope: .only(["import"]),
            help: "stop after N bad lines"),
        OptionSpec(
            "--dry-run", scope: .only(["import"]),
            help: "check every line and send nothing (no server needed); prints valid N<TAB>invalid N"),
        OptionSpec(
            "--locale", .value("ID"), scope: .only([""]),
            help: "the locale of its words and dates, e.g. ko_KR (Korean) (default: LC_ALL, "
                + "LC_MESSAGES or LANG for words; LC_ALL, LC_TIME or LANG for dates)"),
        OptionSpec(
            "--reference", scope: .only(["help"]),
            help: "the command reference README.md carries, made from the same table as this help"),
        OptionSpec("--version", help: "the version, the protocol version and the OpenSSL version"),
        OptionSpec("--help", aliases: ["-h"], help: "this help (after a command: that command's help)"),
    ]

    static let environment: [EnvironmentSpec] = [
        EnvironmentSpec(
            "MEMO_TLS_RECORDS", choices: ["own", "openssl"],
            help: "who protects TLS 1.3 records after the handshake: the client's own record layer or OpenSSL's "
                + "(default while TLS session resumption is on; own turns resumption off)"),
        EnvironmentSpec(
            "MEMO_TLS_RESUME", choices: ["0", "1"],
            help: "0: no TLS session resumption (every connection makes a full handshake, no session is saved); "
                + "1 (default): the server's session ticket is kept in $XDG_CACHE_HOME/memo/tls-session-* and "
                + "offered on the next connection to that server"),
        EnvironmentSpec(
            "MEMO_EXPIRY_WARNING", choices: ["0"],
            help: "no warning on stderr within 30 days of the client certificate's expiry (every command but "
                + "whoami gives it at most once a day otherwise)"),
    ]

    static let epilogue = """
        An ID may be abbreviated to any unique prefix of it. Text read from stdin loses one final newline, and
        show prints one after the content when piped: show ID | edit ID - is byte-exact.
        Empty content is refused unless --allow-empty. -- ends the options: what follows is text even when it
        starts with a dash (memo-client add -- -5 degrees). An unknown command or option close to a known one
        is answered with "did you mean".

        Output is a table for people when stdout is a terminal (short id, local date, first line; colors
        unless NO_COLOR is set) and tab-separated when it is not:
          list, add, edit, rm:  id<TAB>revision<TAB>insertDate<TAB>first line
          watch:                existing|created|updated|deleted<TAB>id<TAB>revision<TAB>updateDate<TAB>first line
                                (existing: the memos there when watch started; deleted: the delete's time)
                                or resync<TAB>N, then every memo again as existing (history-gone)
          show:                 the content's bytes and one newline
          status:               server<TAB>status<TAB>revision<TAB>memos<TAB>connections<TAB>subscribers<TAB>lag
                                <TAB>store<TAB>uptime<TAB>detail
        Errors go to stderr, one line each. A failed write to stdout (a full disk, ulimit -f) ends the command
        with one line and exit 1; a reader that went away (| head) ends it quietly with 0.

        Exit codes:
        \(ExitCode.allCases.map { "  \($0.rawValue)  \($0.meaning)" }.joined(separator: "\n"))
        """

    /// The option of this name (which the table declares: a missing one is a programming error).
    static func option(_ name: String) -> OptionSpec {
        guard let option = table.options.first(where: { $0.name == name }) else {
            preconditionFailure("memo-client's table has no option \(name)")
        }
        return option
    }
}
