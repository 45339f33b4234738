enum Help {
    static let main = """
        usage: memo-server [COMMAND] [options]

        The memo server: owns the memos (SQLite on disk by default) and serves them over TLS.

        Commands:
          serve                      serve memos (the default when no command is given)
          certs init                 make a CA, the server's certificate and a first client certificate
          certs client NAME          issue a client certificate NAME.crt / NAME.key
          certs server               re-issue the server's certificate from the existing CA
          certs revoke NAME|SERIAL   put a client certificate on the CA's revocation list (ca.crl)
          certs list                 every certificate the CA issued: name, role, serial, expiry, revoked

        memo-server COMMAND --help describes a command's options; memo-server --version prints the version,
        the protocol version, and the OpenSSL and SQLite versions.
        """

    static let serve = """
        usage: memo-server serve [options]

        Serves memos over TLS (mutual TLS: clients need a certificate signed by the CA in --certs). Prints
        exactly one line `listening on HOST:PORT` to stdout once it accepts connections (one that cannot listen
        exits 1 and removes the store, CA and keys it made for this start); logs go to stderr
        (one line per connection opened and closed). SIGTERM or SIGINT stops it cleanly: it stops accepting,
        sends going-away to every client, answers the writes in flight, closes the store and exits 0.
        SIGHUP reloads server.crt, server.key, ca.crt and ca.crl from --certs: new handshakes use them,
        connections stay open except those of a revoked certificate (going-away 206); a reload that fails
        keeps the certificates loaded before and logs why. A warning is logged when server.crt expires
        within 30 days.

        Options:
          --listen HOST[:PORT]       address to listen on (default 127.0.0.1:7420; the port defaults to 7420;
                                     port 0 picks a free port; IPv6 as [::1]:PORT)
          --store sqlite:PATH|memory where memos live (default sqlite:memo-data/memos.sqlite); a SQLite file
                                     serves one server, locked through PATH.lock while it runs
          --store postgres://URI     a PostgreSQL database several servers share (any libpq URI, also
                                     postgresql://; password from the URI, PGPASSWORD or ~/.pgpass)
          --certs DIR                ca.crt, server.crt, server.key and, when present, ca.crl (default
                                     certs); when DIR holds no CA the server makes one as `certs init` would
                                     and says where
          --threads N                event-loop threads (default: one per CPU the server may use, from its
                                     affinity mask, e.g. under taskset, at most 64; given: 1 to 256)
          --max-connections N        connections served at once; more are refused with going-away 302
                                     (default 16384)
          --max-frame BYTES          largest frame accepted or sent (default 1048576)
          --max-in-flight N          unanswered requests per connection before it is closed with 300
                                     (default 1024)
          --max-outbound BYTES       bytes queued for one client before it is dropped as a slow consumer
                                     with 301 (default 8388608)
          --handshake-timeout SECS   time to finish TLS and hello (default 10)
          --frame-timeout SECS       time for a frame, once begun, to arrive whole; a client that stops
                                     mid-frame is closed with 304 frame-timeout (default 30)
          --history N                changes kept for clients that resume (default 100000)
          --storage-timeout SECS     PostgreSQL only: the most a write waits for the database, from 0.1 to
                                     60 (default 5); then it is answered 501 storage-unavailable (nothing
                                     changed) or 505 outcome-unknown (sent, no answer), and the connection to
                                     PostgreSQL is made again. Every other call to PostgreSQL has it too
          --max-feed-lag SECS        PostgreSQL only: how long this server may go without confirming it has
                                     every change, from 0.1 to 3600 (default 5); past it, or when it finds
                                     itself below the retained history, it sends every client going-away 504
                                     lagging, answers reads and writes 501 and reloads a snapshot by itself
          --tls-records own|openssl  who protects TLS 1.3 records after the handshake: the server's own
                                     record layer (default; less memory per connection) or OpenSSL's
          --log-format text|json     text: the UTC time, then the line (default); json: one object per line
                                     with time, level, event, the line's fields (conn, peer, cn, reason, ...)
                                     and message (the text line)
          --log-level LEVEL          debug, info (default), warn or error: lines below it are left out

        Under systemd (NOTIFY_SOCKET set) the server sends READY=1 once it listens, RELOADING=1 and READY=1
        around a SIGHUP reload, STOPPING=1 when it stops, and WATCHDOG=1 every WATCHDOG_USEC/2 when the
        unit has WatchdogSec= (Type=notify; README.md has a unit file).
          --metrics [HOST:]PORT      serve plain HTTP (no TLS) on this address: /metrics (Prometheus text),
                                     /healthz (200 while the process runs), /readyz (200 when ready, 503 and
                                     the reason when not); off by default; PORT or :PORT binds 127.0.0.1;
                                     logs `metrics on http://HOST:PORT` to stderr
        """

    static let certsInit = """
        usage: memo-server certs init [--dir DIR] [--host NAME]... [--force]

        Writes ca.crt, ca.key, server.crt, server.key and client.crt, client.key (ECDSA P-256) into DIR
        (default certs), and ca.index, the record of the certificates the CA issues. The CA is valid for 10
        years, server.crt for 825 days, client.crt for 365. The server certificate names localhost,
        127.0.0.1, ::1 and each --host (a name or an IP address). Keys are mode 0600. Existing files are
        never overwritten without --force, which also removes the old CA's revocation list (ca.crl).
        """

    static let certsClient = """
        usage: memo-server certs client NAME [--dir DIR] [--read-only] [--days N] [--force]

        Issues NAME.crt and NAME.key in DIR (default certs), signed by DIR/ca.crt and DIR/ca.key, valid for
        --days N days (default 365), and records it in DIR/ca.index. The certificate's common name is NAME;
        --read-only makes a certificate that may get, list and subscribe but not write. NAME is letters,
        digits, '-', '_' and '.'. --force replaces NAME.crt and NAME.key; the certificate they held stays
        valid until it expires or is revoked (certs revoke NAME revokes every certificate named NAME).
        """

    static let certsServer = """
        usage: memo-server certs server [--dir DIR] [--host NAME]... [--days N]

        Re-issues server.crt and server.key in DIR (default certs) from the CA already there, for localhost,
        127.0.0.1, ::1 and each --host (a name or an IP address), valid for --days N days (default 825).
        The CA and every client certificate stay valid. A running memo-server loads the new certificate on
        SIGHUP.
        """

    static let certsRevoke = """
        usage: memo-server certs revoke NAME|SERIAL [--dir DIR]

        Revokes the client certificates named NAME (every one not yet revoked), or the certificate with that
        serial number (hex, as certs list or `openssl x509 -serial` shows it), and writes DIR/ca.crl, a
        revocation list signed by the CA. memo-server refuses a revoked certificate with the
        certificate_revoked alert once it has loaded the list: at start, or on SIGHUP, which also closes the
        revoked client's open connections with going-away 206. A serial the index does not know (a
        certificate issued before memo kept one) is revoked when it has at least 16 hex digits.
        """

    static let certsList = """
        usage: memo-server certs list [--dir DIR]

        Lists every certificate the CA in DIR (default certs) issued, from DIR/ca.index, oldest first: NAME,
        ROLE (server, read-write, read-only), SERIAL, EXPIRES (UTC), SUPERSEDED (the serial of the certificate
        issued later in its place: a re-issued server certificate, or a client certificate re-issued under
        the same name; - when none) and REVOKED (the time, or -). A superseded certificate stays valid until
        it expires or is revoked. A CA made before memo kept an index has none: the list then shows the
        certificates found in DIR that the CA signed, and says so on stderr.
        """

    static let certs = [certsInit, certsClient, certsServer, certsRevoke, certsList].joined(separator: "\n\n")
}
