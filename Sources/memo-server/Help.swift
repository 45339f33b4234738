enum Help {
    static let main = """
        usage: memo-server [COMMAND] [options]

        The memo server: owns the memos (SQLite on disk by default) and serves them over TLS.

        Commands:
          serve                      serve memos (the default when no command is given)
          certs init                 make a CA, the server's certificate and a first client certificate
          certs client NAME          issue a client certificate NAME.crt / NAME.key

        memo-server COMMAND --help describes a command's options.
        """

    static let serve = """
        usage: memo-server serve [options]

        Serves memos over TLS (mutual TLS: clients need a certificate signed by the CA in --certs). Prints
        exactly one line `listening on HOST:PORT` to stdout once it accepts connections; logs go to stderr
        (one line per connection opened and closed). SIGTERM or SIGINT stops it cleanly: it stops accepting,
        sends going-away to every client, answers the writes in flight, closes the store and exits 0.

        Options:
          --listen HOST:PORT         address to listen on (default 127.0.0.1:7420; port 0 picks a free port)
          --store sqlite:PATH|memory where memos live (default sqlite:memo-data/memos.sqlite); a SQLite file
                                     serves one server, locked through PATH.lock while it runs
          --certs DIR                ca.crt, server.crt, server.key (default certs); when DIR holds no CA the
                                     server makes one as `certs init` would and says where
          --threads N                event-loop threads (default: one per CPU the server may use, from its
                                     affinity mask, e.g. under taskset; at most 64)
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
        """

    static let certsInit = """
        usage: memo-server certs init [--dir DIR] [--host NAME]... [--force]

        Writes ca.crt, ca.key, server.crt, server.key and client.crt, client.key (ECDSA P-256) into DIR
        (default certs). The server certificate names localhost, 127.0.0.1, ::1 and each --host (a name or
        an IP address). Keys are mode 0600. Existing files are never overwritten without --force.
        """

    static let certsClient = """
        usage: memo-server certs client NAME [--dir DIR] [--read-only] [--force]

        Issues NAME.crt and NAME.key in DIR (default certs), signed by DIR/ca.crt and DIR/ca.key. The
        certificate's common name is NAME; --read-only makes a certificate that may get, list and subscribe
        but not write. NAME is letters, digits, '-', '_' and '.'.
        """
}
