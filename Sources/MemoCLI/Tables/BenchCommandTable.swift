/// memo-bench's modes and options, declared once: main.swift parses with it and `MODE --help` prints it.
public enum BenchCommandTable {
    /// With no mode: requests against a server, shaped like redis-benchmark.
    public static let requestsHelp = """
        --server may list several servers over one PostgreSQL (commas): the connections are spread over them.
        C connections (default 50), each sending P requests (default 1) before reading their answers, until N
        requests in all (default 100000) are answered. --size is the memo content in bytes (default 64). get and
        update work on 1,000 memos the benchmark makes first; list lists whatever the store holds. Prints
        requests per second and latency p50/p99 (from a request's send to its answer); --json prints
        {"op":..,"clients":..,"pipeline":..,"requests":..,"ops_per_sec":..,"p50_ms":..,"p99_ms":..,"errors":..}
        (errors: requests answered with an error). An answer of another type, one to no request in flight, or
        the server's going-away stops the run with exit status 1. Like redis-benchmark, T threads (default 1)
        multiplex all the connections with epoll.
        """

    public static let table = CommandTable(
        program: "memo-bench", noCommandName: "requests (no mode)", commandWord: "mode",
        usage: """
            usage: memo-bench [MODE] [options]
                   memo-bench MODE --help | memo-bench --version
            """,
        introduction: """
            With no mode: requests against a server, shaped like redis-benchmark (memo-bench --help-requests).
            memo-bench MODE --help describes a mode's options.
            """,
        commands: [
            CommandSpec(
                "store", summary: "creates per second straight into a store (no network): group commit at work",
                help: """
            W concurrent writers (default 1) make N creates in all (default 2000) of BYTES of content (default 64)
            in a fresh store (default: a SQLite file in a new temporary folder, removed afterwards), each writer
            waiting for its create to be committed before the next. Prints creates per second, latency p50 and p99,
            and, for SQLite, how many transactions the writes shared.
            """),
            CommandSpec(
                "connections", summary: "N idle TLS connections held open; the server's memory per connection",
                help: """
            Opens N TLS connections (each completes TLS and hello), holds them idle for SECONDS (default 2), and
            reports the rate at which they were opened (full handshakes per second, one at a time) and, with
            --server-pid, the server's resident memory before and after and the difference per connection.
            """),
            CommandSpec(
                "handshakes", summary: "full TLS handshakes per second",
                help: """
            C threads (default 4) each connect, complete a full TLS handshake and hello, and close, N times in all
            (default 2000). Prints handshakes per second and latency p50 and p99.
            """),
            CommandSpec(
                "fanout", summary: "S subscribers, K changes at R per second: delivery latency and server CPU per "
                    + "delivery",
                help: """
            Opens S subscribed connections (default 1000), then creates K memos (default 1000) at R per second
            (default 100), each carrying its send time. Reports the delivery latency p50/p99 over all deliveries
            and for the last subscriber of each change, and, with --server-pid, the server's CPU time per delivery.
            With several servers (over one PostgreSQL) the subscribers are spread over them, the writer writes
            through the first, and the latency is also reported per server: the others' is cross-server delivery.
            A delivery is timed when poll says its connection is readable, not after this client has read the other
            ready connections. --receipts writes one line per change and server: `revision server sent p50 last`
            (monotonic nanoseconds: sent, the median and the last subscriber's receipt), to set beside the servers'
            stage traces (MEMO_STAGE_TRACE, bench/postgres.sh).
            """),
            CommandSpec(
                "client", summary: "the front end with N memos mirrored: time per remote change and per filter "
                    + "keystroke",
                help: """
            Builds a Mirror from a snapshot of N memos (default 100000) of BYTES content (default 100), shows it in a
            ListViewModel, then:
              change     K times (default 20) applies one remote create to the Mirror and hands its position edits
                         to the view model as RemoteStore does after a read; median and worst time per change
              storm      S changes (default 20000: creates, updates and deletes of random memos, 16 per read) through
                         the same path as fast as they go; the changes per second a mirror of N memos follows
              keystroke  types TEXT (default 99999) into the filter one character at a time, then deletes it with
                         Backspace, K times (--rounds, default 1); the first keystroke (after an empty filter: the
                         median of the K), median and worst time per keystroke (the view model's state, ready to draw)
            """),
            CommandSpec(
                "keystroke", summary: "the real front end in a pseudo-terminal: key-to-screen latency while a save "
                    + "waits on a stopped server",
                help: """
            Starts memo-server (next to memo-bench) on a new SQLite file and memo-client (next to memo-bench, or
            PATH) in a pseudo-terminal of 100x30, waits for the list to say live, opens the editor (n), stops the
            server with SIGSTOP, types a word and Ctrl-S, then types N keys (default 200), one at a time: for each,
            the time from writing it to the terminal until its character appears in what the front end writes back.
            Each key is a different Hangul syllable, so its three bytes are found only once drawn. When the save's
            timeout question comes up, Esc closes it (the save goes on) and the keys continue. Reports the median,
            p99 and worst latency; a key that does not appear within 20 s counts as 20 s. The server is continued
            and stopped, the client killed, at the end.
            """),
            CommandSpec(
                "snapshot", summary: "time until a fresh mirror of an N-memo store is ready",
                help: """
            Fills the store up to N memos (default 100000) of BYTES content (default 64) if it holds fewer, then R
            times (default 3) starts a fresh client (MemoConnection and its RemoteStore, no cache file) and times
            connect + snapshot until its mirror is ready. Then updates one memo and reports the bytes its change
            frame took on a subscriber's connection (plaintext frame; TLS adds about 22 bytes per record).
            """),
            CommandSpec(
                "large", summary: "a million-memo store: server start, server memory, a fresh mirror, a full list",
                help: """
            Fills DIR/memos.sqlite (default: a new temporary folder, removed afterwards) with N memos (default
            1000000) of BYTES content (default 100) straight through the SQLite store, unless it already holds
            them; with --postgres URI the store is that PostgreSQL database instead, which the caller filled
            (bench/large-postgres.sh does), and DIR holds only the certificates. Then R times (default 3) starts
            memo-server (next to memo-bench) on that store and reports:
              start    from exec to its `listening on` line (the whole file read into memory), and the CPU
                       time the server had used by then
              rss      the server's VmRSS once listening, per memo and against the content bytes
              mirror   a fresh MemoConnection + RemoteStore until its mirror of every memo is ready, and
                       what memo-bench's own VmRSS grew by meanwhile (the first run's)
              list     `memo-client list` (next to memo-bench) with stdout to a pipe, until it exits
            Each figure is the best of the runs, with the median; the server is stopped (SIGTERM) after each run.
            """),
            CommandSpec(
                "redis-fanout", summary: "the fanout shape against Redis over TLS (bench/compare.sh)",
                help: """
            The fanout and connections shapes against a Redis server with TLS (PUBLISH/SUBSCRIBE on one channel;
            idle connections that each answered PING), using DIR/ca.crt, client.crt and client.key.
            """),
            CommandSpec(
                "redis-connections", summary: "the connections shape against Redis over TLS (bench/compare.sh)",
                help: """
            The fanout and connections shapes against a Redis server with TLS (PUBLISH/SUBSCRIBE on one channel;
            idle connections that each answered PING), using DIR/ca.crt, client.crt and client.key.
            """),
        ],
        options: [
            OptionSpec(
                "--store", .value("sqlite:PATH|memory"), scope: .only(["store"]),
                help: "the store: sqlite (a new temporary file), sqlite:PATH or memory"),
            OptionSpec("--writers", .value("W"), scope: .only(["store"]), help: "concurrent writers"),
            OptionSpec("--requests", .value("N"), scope: .only(["store", ""]), help: "requests in all"),
            OptionSpec(
                "--size", .value("BYTES"), scope: .only(["store", "client", "snapshot", "large", ""]),
                help: "bytes of content per memo"),
            OptionSpec(
                "--keys", .value("N"), scope: .only(["keystroke"]), help: "keys typed while the save waits (1 to 2000)"),
            OptionSpec(
                "--client", .value("PATH"), scope: .only(["keystroke"]), completion: .files,
                help: "the memo-client to drive (default: the one next to memo-bench)"),
            OptionSpec(
                "--json", scope: .only(["store", "connections", "handshakes", "fanout", "client", "keystroke",
                    "snapshot", "large", "redis-fanout", "redis-connections", ""]),
                help: "one JSON object instead of text"),
            OptionSpec(
                "--server", .value("HOST:PORT"), scope: .only(["connections", "handshakes", "fanout", "snapshot",
                    "redis-fanout", "redis-connections", ""]),
                help: "the server (HOST:PORT; several separated by commas where the mode says so; default "
                    + "127.0.0.1:7420)"),
            OptionSpec(
                "--certs", .value("DIR"), scope: .only(["connections", "handshakes", "fanout", "snapshot",
                    "redis-fanout", "redis-connections", ""]), completion: .directories,
                help: "folder with ca.crt, client.crt and client.key (default certs)"),
            OptionSpec(
                "--count", .value("N"), scope: .only(["connections", "handshakes", "redis-connections"]),
                help: "connections (or handshakes) in all"),
            OptionSpec(
                "--hold", .value("SECONDS"), scope: .only(["connections", "redis-connections"]),
                help: "seconds the connections are held idle"),
            OptionSpec(
                "--server-pid", .value("PID"), scope: .only(["connections", "fanout", "redis-fanout",
                    "redis-connections"]),
                help: "the server's process id, to read its memory or CPU time"),
            OptionSpec(
                "--clients", .value("C"), scope: .only(["handshakes", ""]),
                help: "connections (or handshake threads)"),
            OptionSpec(
                "--subscribers", .value("S"), scope: .only(["fanout", "redis-fanout"]),
                help: "subscribed connections"),
            OptionSpec(
                "--changes", .value("K"), scope: .only(["fanout", "client", "redis-fanout"]),
                help: "changes made (or applied)"),
            OptionSpec("--rate", .value("R"), scope: .only(["fanout", "redis-fanout"]), help: "changes per second"),
            OptionSpec(
                "--receipts", .value("FILE"), scope: .only(["fanout"]), completion: .files,
                help: "write one line per change and server: revision server sent p50 last"),
            OptionSpec(
                "--memos", .value("N"), scope: .only(["client", "snapshot", "large"]),
                help: "memos in the store (or the mirror)"),
            OptionSpec("--storm", .value("S"), scope: .only(["client"]), help: "changes applied as fast as they go"),
            OptionSpec("--filter", .value("TEXT"), scope: .only(["client"]), help: "text typed into the filter"),
            OptionSpec(
                "--rounds", .value("K"), scope: .only(["client"]),
                help: "times the filter is typed and deleted (the first keystroke's figure is their median)"),
            OptionSpec(
                "--runs", .value("R"), scope: .only(["snapshot", "large"]),
                help: "times it is measured (the best is reported)"),
            OptionSpec(
                "--dir", .value("DIR"), scope: .only(["large"]), completion: .directories,
                help: "folder of the SQLite file (default: a new temporary folder, removed afterwards)"),
            OptionSpec(
                "--postgres", .value("URI"), scope: .only(["large"]),
                help: "a PostgreSQL database already holding the memos, instead of the SQLite file"),
            OptionSpec(
                "--pipeline", .value("P"), scope: .only([""]),
                help: "requests each connection sends before reading their answers"),
            OptionSpec(
                "--op", .choice(["create", "get", "update", "list"]), scope: .only([""]),
                help: "the request measured"),
            OptionSpec(
                "--threads", .value("T"), scope: .only([""]),
                help: "threads multiplexing the connections, 1 to 64"),
            OptionSpec("--help-requests", scope: .only([""]), help: "the help of the requests measured with no mode"),
            OptionSpec("--version", help: "the version, the protocol version, and the OpenSSL and SQLite versions"),
            OptionSpec("--help", aliases: ["-h"], help: "this help (after a mode: that mode's help)"),
        ])
}
