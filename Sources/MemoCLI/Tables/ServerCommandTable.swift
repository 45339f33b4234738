/// memo-server's command line, declared once: main.swift parses with it, `--help` and `COMMAND --help` print it,
/// `completion bash|zsh|fish` writes it out, and README's reference is checked against it (CommandTableTests).
public enum ServerCommandTable {
    static let certsCommands = ["certs init", "certs client", "certs server", "certs revoke", "certs list"]

    public static let table = CommandTable(
        program: "memo-server", defaultCommand: "serve",
        usage: """
            usage: memo-server [COMMAND] [options]
                   memo-server COMMAND --help | memo-server --version
            """,
        introduction: """
            The memo server: owns the memos (SQLite on disk by default) and serves them over TLS. memo-server
            COMMAND --help describes a command's options; memo-server --version prints the version, the protocol
            version, and the OpenSSL and SQLite versions.
            """,
        commands: [
            CommandSpec(
                "serve", summary: "serve memos (the default when no command is given)",
                help: """
                    Serves memos over TLS (mutual TLS: clients need a certificate signed by the CA in --certs). Prints
                    exactly one line `listening on HOST:PORT` to stdout once it accepts connections (one that cannot
                    listen exits 1 and removes the store, CA and keys it made for this start); logs go to stderr
                    (one line per connection opened and closed). SIGTERM or SIGINT stops it cleanly: it stops
                    accepting, sends going-away to every client, answers the writes in flight, closes the store and
                    exits 0. SIGHUP reloads server.crt, server.key, ca.crt and ca.crl from --certs: new handshakes use
                    them, connections stay open except those of a revoked certificate (going-away 206); a reload that
                    fails keeps the certificates loaded before and logs why. A warning is logged when server.crt
                    expires within 30 days.

                    Under systemd (NOTIFY_SOCKET set) the server sends READY=1 once it listens, RELOADING=1 and
                    READY=1 around a SIGHUP reload, STOPPING=1 when it stops, and WATCHDOG=1 every WATCHDOG_USEC/2 when
                    the unit has WatchdogSec= (Type=notify; README.md has a unit file).
                    """),
            CommandSpec(
                "certs init", summary: "make a CA, the server's certificate and a first client certificate",
                help: """
                    Writes ca.crt, ca.key, server.crt, server.key and client.crt, client.key (ECDSA P-256) into DIR
                    (default certs), and ca.index, the record of the certificates the CA issues. The CA is valid for
                    10 years, server.crt for 825 days, client.crt for 365. The server certificate names localhost,
                    127.0.0.1, ::1 and each --host (a name or an IP address). Keys are mode 0600. Existing files are
                    never overwritten without --force, which also removes the old CA's revocation list (ca.crl).
                    """),
            CommandSpec(
                "certs client", arguments: "NAME", summary: "issue a client certificate NAME.crt / NAME.key",
                help: """
                    Issues NAME.crt and NAME.key in DIR (default certs), signed by DIR/ca.crt and DIR/ca.key, valid
                    for --days N days (default 365), and records it in DIR/ca.index. The certificate's common name is
                    NAME; --read-only makes a certificate that may get, list and subscribe but not write. NAME is
                    letters, digits, '-', '_' and '.'. --force replaces NAME.crt and NAME.key; the certificate they
                    held stays valid until it expires or is revoked (certs revoke NAME revokes every certificate
                    named NAME).
                    """),
            CommandSpec(
                "certs server", summary: "re-issue the server's certificate from the existing CA",
                help: """
                    Re-issues server.crt and server.key in DIR (default certs) from the CA already there, for
                    localhost, 127.0.0.1, ::1 and each --host (a name or an IP address), valid for --days N days
                    (default 825). The CA and every client certificate stay valid. A running memo-server loads the
                    new certificate on SIGHUP.
                    """),
            CommandSpec(
                "certs revoke", arguments: "NAME|SERIAL",
                summary: "put a client certificate on the CA's revocation list (ca.crl)",
                help: """
                    Revokes the client certificates named NAME (every one not yet revoked), or the certificate with
                    that serial number (hex, as certs list or `openssl x509 -serial` shows it), and writes DIR/ca.crl,
                    a revocation list signed by the CA. memo-server refuses a revoked certificate with the
                    certificate_revoked alert once it has loaded the list: at start, or on SIGHUP, which also closes
                    the revoked client's open connections with going-away 206. A serial the index does not know (a
                    certificate issued before memo kept one) is revoked when it has at least 16 hex digits.
                    """),
            CommandSpec(
                "certs list", summary: "every certificate the CA issued: name, role, serial, expiry, revoked",
                help: """
                    Lists every certificate the CA in DIR (default certs) issued, from DIR/ca.index, oldest first:
                    NAME, ROLE (server, read-write, read-only), SERIAL, EXPIRES (UTC), SUPERSEDED (the serial of the
                    certificate issued later in its place: a re-issued server certificate, or a client certificate
                    re-issued under the same name; - when none) and REVOKED (the time, or -). A superseded
                    certificate stays valid until it expires or is revoked. A CA made before memo kept an index has
                    none: the list then shows the certificates found in DIR that the CA signed, and says so on
                    stderr.
                    """),
            CommandSpec(
                "completion", arguments: "bash|zsh|fish", completion: .words(CommandTable.completionShells),
                summary: "a shell completion script (commands and options)",
                help: """
                    Prints a completion script for memo-server's commands and options. For bash: source <(memo-server
                    completion bash); for zsh: source <(memo-server completion zsh); for fish: memo-server completion
                    fish | source.
                    """),
            CommandSpec(
                "help", arguments: "[COMMAND]", completion: .commands,
                summary: "this help, or one command's (also: COMMAND --help)"),
        ],
        options: [
            OptionSpec(
                "--listen", .value("HOST[:PORT]"), default: "127.0.0.1:7420", scope: .only(["serve"]),
                help: "address to listen on; the port defaults to 7420; port 0 picks a free port; IPv6 as [::1]:PORT"),
            OptionSpec(
                "--store", .value("sqlite:PATH|postgres://URI|memory"), default: "sqlite:memo-data/memos.sqlite",
                scope: .only(["serve"]),
                help: "where memos live: a SQLite file serves one server, locked through PATH.lock while it runs; "
                    + "postgres:// (also postgresql://, any libpq URI; password from the URI, PGPASSWORD or "
                    + "~/.pgpass) is a PostgreSQL database several servers share; memory keeps nothing"),
            OptionSpec(
                "--certs", .value("DIR"), default: "certs", scope: .only(["serve"]), completion: .directories,
                help: "ca.crt, server.crt, server.key and, when present, ca.crl; when DIR holds no CA the server "
                    + "makes one as `certs init` would and says where"),
            OptionSpec(
                "--threads", .value("N"), scope: .only(["serve"]),
                help: "event-loop threads (default: one per CPU the server may use, from its affinity mask, e.g. "
                    + "under taskset, at most 64; given: 1 to 256)"),
            OptionSpec(
                "--max-connections", .value("N"), default: "16384", scope: .only(["serve"]),
                help: "connections served at once; at the limit the oldest connection still without hello after 1 s is "
                    + "closed to make room, else the new one is refused with going-away 302"),
            OptionSpec(
                "--max-frame", .value("BYTES"), default: "1048576", scope: .only(["serve"]),
                help: "largest frame accepted or sent"),
            OptionSpec(
                "--max-in-flight", .value("N"), default: "1024", scope: .only(["serve"]),
                help: "unanswered requests per connection before it is closed with 300"),
            OptionSpec(
                "--max-outbound", .value("BYTES"), default: "8388608", scope: .only(["serve"]),
                help: "bytes queued for one client before it is dropped as a slow consumer with 301"),
            OptionSpec(
                "--handshake-timeout", .value("SECS"), default: "10", scope: .only(["serve"]),
                help: "time to finish TLS and hello"),
            OptionSpec(
                "--frame-timeout", .value("SECS"), default: "30", scope: .only(["serve"]),
                help: "time for a frame, once begun, to arrive whole; a client that stops mid-frame is closed with "
                    + "304 frame-timeout"),
            OptionSpec(
                "--history", .value("N"), default: "100000", scope: .only(["serve"]),
                help: "changes kept for clients that resume"),
            OptionSpec(
                "--versions", .value("K"), default: "50", scope: .only(["serve"]),
                help: "versions kept per memo (memo-client log, restore), 0 to 10000; 0 keeps none"),
            OptionSpec(
                "--trash-days", .value("D"), default: "30", scope: .only(["serve"]),
                help: "days a deleted memo stays in the trash with its versions before it is purged, 0 to 3650; "
                    + "0 purges it at once"),
            OptionSpec(
                "--storage-timeout", .value("SECS"), default: "5", scope: .only(["serve"]),
                help: "PostgreSQL only: the most a write waits for the database, from 0.1 to 60; then it is "
                    + "answered 501 storage-unavailable (nothing changed) or 505 outcome-unknown (sent, no answer), "
                    + "and the connection to PostgreSQL is made again. Every other call to PostgreSQL has it too"),
            OptionSpec(
                "--max-feed-lag", .value("SECS"), default: "5", scope: .only(["serve"]),
                help: "PostgreSQL only: how long this server may go without confirming it has every change, from "
                    + "0.1 to 3600; past it, or when it finds itself below the retained history, it sends every "
                    + "client going-away 504 lagging, answers reads and writes 501 and reloads a snapshot by itself "
                    + "(a read still waiting for PostgreSQL: not ready and reads 501 past it, the rest when "
                    + "--storage-timeout ends the wait)"),
            OptionSpec(
                "--tls-records", .choice(["own", "openssl"]), default: "own", scope: .only(["serve"]),
                help: "who protects TLS 1.3 records after the handshake: the server's own record layer (less "
                    + "memory per connection) or OpenSSL's"),
            OptionSpec(
                "--sends", .choice(["batched", "each"]), default: "batched", scope: .only(["serve"]),
                help: "how a change reaches a thread's subscribers: their records handed to the kernel in one "
                    + "io_uring submission, or one send(2) each (also what batched falls back to where the kernel "
                    + "refuses io_uring)"),
            OptionSpec(
                "--tls-tickets", .value("SECS"), default: "3600", scope: .only(["serve"]),
                help: "the lifetime of the TLS 1.3 session ticket sent with the answer to hello, from 0 (none: "
                    + "clients cannot resume) to 86400"),
            OptionSpec(
                "--log-format", .choice(["text", "json"]), default: "text", scope: .only(["serve"]),
                help: "text: the UTC time, then the line; json: one object per line with time, level, event, the "
                    + "line's fields (conn, peer, cn, reason, ...) and message (the text line)"),
            OptionSpec(
                "--log-level", .choice(["debug", "info", "warn", "error"]), default: "info", scope: .only(["serve"]),
                help: "lines below it are left out"),
            OptionSpec(
                "--metrics", .value("[HOST:]PORT"), scope: .only(["serve"]),
                help: "serve plain HTTP (no TLS) on this address: /metrics (Prometheus text), /healthz (200 while "
                    + "the process runs), /readyz (200 when ready, 503 and the reason when not); off by default; "
                    + "PORT or :PORT binds 127.0.0.1; logs `metrics on http://HOST:PORT` to stderr"),
            OptionSpec(
                "--dir", .value("DIR"), default: "certs", scope: .only(certsCommands), completion: .directories,
                help: "the certificates' folder"),
            OptionSpec(
                "--host", .value("NAME"), repeatable: true, scope: .only(["certs init", "certs server"]),
                help: "a name or IP address the server certificate is also for (besides localhost, 127.0.0.1 and "
                    + "::1); may be given again"),
            OptionSpec(
                "--days", .value("N"), scope: .only(["certs client", "certs server"]),
                help: "days the certificate is valid, 1 to 36500 (default 365 for a client, 825 for the server)"),
            OptionSpec(
                "--read-only", scope: .only(["certs client"]),
                help: "a certificate that may get, list and subscribe but not write"),
            OptionSpec(
                "--force", scope: .only(["certs init", "certs client"]),
                help: "replace existing files (init: also removes the old CA's revocation list)"),
            OptionSpec(
                "--reference", scope: .only(["help"]),
                help: "the command reference README.md carries, made from the same table as this help"),
            OptionSpec(
                "--version", help: "the version, the protocol version, and the OpenSSL and SQLite versions"),
            OptionSpec("--help", aliases: ["-h"], help: "this help (after a command: that command's help)"),
        ],
        environment: [
            EnvironmentSpec(
                "MEMO_TLS_WIPE_FREED", choices: ["0"],
                help: "do not wipe the memory OpenSSL frees (wiped by default; for measuring that cost only)"),
        ])
}
