/// memo-torture's modes and options, declared once: main.swift parses with it and `MODE --help` prints it.
public enum TortureCommandTable {
    public static let table = CommandTable(
        program: "memo-torture", noCommandName: nil, commandWord: "mode",
        usage: """
            usage: memo-torture MODE [options]
                   memo-torture MODE --help | memo-torture --version
            """,
        introduction: """
            Torture runs against real memo-server processes: each checks invariants and exits 0 when all held.
            """,
        commands: [
            CommandSpec(
                "crash", summary: "writers and watchers against a server killed with SIGKILL and restarted, then "
                    + "every acknowledged write and every watched change is checked",
                help: """
            Starts memo-server (sqlite store, a fixed free loopback port), N writer connections (creates with ids
            they choose, updates, deletes; --pipeline requests in flight each) and N `memo-client watch --json`
            processes. Each cycle lets the server run for a random time between --min-uptime and --max-uptime
            seconds (default 0.3 and 1.5), kills it with SIGKILL and starts it again on the same port. Writes in
            flight at a kill are unknown and sent again after reconnecting. Then it checks: every acknowledged write
            is in the history at its revision and in the final list; nothing acknowledged as deleted came back; no
            memo exists twice; no welcome after a restart is behind an acknowledged revision; each watcher printed
            every change exactly once, in order, as the history has it.

            Prints one summary line and exits 0 when all holds, 1 on any violation. Defaults: --cycles 5
            --writers 4 --watchers 2 --pipeline 4; the binaries default to the ones next to memo-torture.
            --keep leaves the data, certificates and logs in place and says where. --store memory runs the same
            against a store that forgets everything at a kill: the checks must then fail (a check of the checks).
            --store postgres://URI (an empty database) runs two servers over it: the writers are spread over both,
            the watchers watch the second, and only the first is killed and restarted; the truth is read from the
            second, which stayed up.
            """),
            CommandSpec(
                "hostile", summary: "a catalog of hostile peers against one live server while a good client keeps "
                    + "working",
                help: """
            Starts one memo-server (sqlite store, port 0) with small limits: --handshake-timeout 2,
            --frame-timeout 2, --max-in-flight 64, --max-outbound 262144 (or the --max-outbound given). Runs each
            case of the catalog (--list shows it; --cases picks some) while a good client on its own connection
            sends a ping and a create every 50 ms. A case passes when the hostile peer got the expected outcome,
            and every round of the good client during the case and the first one after it was answered within
            --latency-bound (default 500 ms). The server's VmRSS is sampled every 20 ms; the run fails if it ever
            goes over --rss-bound (default 256 MiB). --flood sets the connections of the half-open flood (default
            2000).

            Prints `PASS|FAIL name: expected ...; got ...` per case and a summary line; exits 1 if any case failed.
            """),
            CommandSpec(
                "gray", summary: "gray failures (SIGSTOP of a server, PostgreSQL or one backend, network partitions, "
                    + "a full disk, a server behind the history) during a write storm with watchers, each party in "
                    + "a network namespace of its own (needs root); the same invariants checked after each fault",
                help: """
            Needs root: every party runs in a network namespace of its own (PostgreSQL on 192.0.2.1, memo-server A
            and B on 192.0.2.2-3 towards PostgreSQL and 192.0.2.65-66 towards the clients, each client on
            192.0.2.81 and up), linked by veth pairs to two bridges in one more namespace. Names start with a
            prefix unique to the run; the namespaces, the PostgreSQL cluster and the tmpfs are removed at the end,
            also when the harness fails or is killed.

            For each fault, --runs times: a fresh database (or SQLite file), the servers, N `memo-client watch
            --json` processes per server (half of them list A first, half B), N writer clients (creates with ids,
            updates and deletes with the expected revision, spread over the servers, each moving to the other
            server when its connection is lost). After --warmup seconds the fault starts and lasts --fault-seconds,
            then it is healed. Faults (--list prints them):
              stop-server                SIGSTOP of server A (it has watchers and takes writes), then SIGCONT
              stop-postgres              SIGSTOP of every PostgreSQL process, then SIGCONT
              stop-feed-backend          SIGSTOP of server A's feed backend (application_name memo-feed) while
                                         it waits idle for its client (it holds no lock), then SIGCONT
              stop-writer-backend        the same for A's writer backend (application_name memo-writer)
              partition-server-database  server A's link to PostgreSQL down, then up
              partition-server-clients   server A's link to its clients down, then up
              disk-full                  one server over SQLite on a small tmpfs (--disk-size, default 16 MiB):
                                         filled to the last byte, then the filler removed
              below-history              servers with --history N (default 50); SIGSTOP of server B while the
                                         writers go on through A, then SIGCONT

            Checked after each fault: every acknowledged write is in the store (lost); no write answered with an
            error other than 505 outcome-unknown is in the store (wrongly reported); every watcher printed every
            change after its start exactly once and in order, or an explicit resync event and the full set, and
            reached the head (watcher gaps, repeats, mismatches); under the faults that leave every server running
            and reachable (stop-postgres, the backends, partition-server-database, disk-full), every write was
            answered, if only with an error, within --timeout (unanswered); and the watchers caught up, within
            --bound seconds (default 3 x --keepalive, or 9: 3 x memo-client's default keepalive of 3 s), with a
            write made through a healthy server just after the fault began (when one server stays healthy) or just
            after the heal (otherwise): time to recover.

            Prints a line per run and a summary line per fault, then `gray summary: PASS|FAIL; ...`; exits 0 when
            every check held, 1 otherwise. Defaults: --runs 1 --writers 4 --watchers 2 (per server)
            --fault-seconds 20 --warmup 2 --timeout 10 (a writer's request deadline) --rate 100 (writes per second
            per writer at most). --short: every fault once with --writers 3 --watchers 1 --fault-seconds 10
            --warmup 1 (about 3 minutes). --keepalive is passed to the watchers as their --keepalive. --keep leaves
            the logs and says where. --check-the-checks plants, after each run, one fault of each kind in copies of
            its records (an acknowledged create reported as failed, an acknowledged create the store never got, a
            change dropped from a watcher's output, one printed twice) and exits 0 only when the checks count every
            one (the run's own result does not count then).
            """),
        ],
        options: [
            OptionSpec("--cycles", .value("N"), scope: .only(["crash"]), help: "kills and restarts of the server"),
            OptionSpec(
                "--writers", .value("N"), scope: .only(["crash", "gray"]),
                help: "writer connections (gray: writer clients)"),
            OptionSpec(
                "--watchers", .value("N"), scope: .only(["crash", "gray"]),
                help: "memo-client watch processes (gray: per server)"),
            OptionSpec("--pipeline", .value("N"), scope: .only(["crash"]), help: "requests in flight per writer"),
            OptionSpec(
                "--min-uptime", .value("SECS"), scope: .only(["crash"]),
                help: "least seconds the server runs before a kill"),
            OptionSpec(
                "--max-uptime", .value("SECS"), scope: .only(["crash"]),
                help: "most seconds the server runs before a kill"),
            OptionSpec("--seed", .value("N"), scope: .only(["crash"]), help: "the random seed (a run can be repeated)"),
            OptionSpec(
                "--server-binary", .value("PATH"), scope: .only(["crash", "hostile", "gray"]), completion: .files,
                help: "the memo-server to run (default: the one next to memo-torture)"),
            OptionSpec(
                "--client-binary", .value("PATH"), scope: .only(["crash", "gray"]), completion: .files,
                help: "the memo-client to run (default: the one next to memo-torture)"),
            OptionSpec(
                "--store", .value("sqlite|memory|postgres://URI"), scope: .only(["crash"]),
                help: "the store the servers use"),
            OptionSpec(
                "--keep", scope: .only(["crash", "hostile", "gray"]),
                help: "leave the data, certificates and logs in place and say where"),
            OptionSpec(
                "--cases", .value("NAME,..."), scope: .only(["hostile"]),
                help: "the cases to run (--list shows the catalog)"),
            OptionSpec("--list", scope: .only(["hostile", "gray"]), help: "print the catalog and exit"),
            OptionSpec(
                "--latency-bound", .value("MS"), scope: .only(["hostile"]),
                help: "the most a good client's round may take, in ms"),
            OptionSpec(
                "--rss-bound", .value("MIB"), scope: .only(["hostile"]),
                help: "the most the server's VmRSS may reach, in MiB"),
            OptionSpec("--flood", .value("N"), scope: .only(["hostile"]), help: "connections of the half-open flood"),
            OptionSpec(
                "--max-outbound", .value("BYTES"), scope: .only(["hostile"]),
                help: "the server's --max-outbound"),
            OptionSpec(
                "--faults", .value("NAME,..."), scope: .only(["gray"]),
                help: "the faults to run (--list prints them)"),
            OptionSpec("--runs", .value("N"), scope: .only(["gray"]), help: "runs per fault"),
            OptionSpec("--short", scope: .only(["gray"]), help: "every fault once, shorter (about 3 minutes)"),
            OptionSpec("--fault-seconds", .value("SECS"), scope: .only(["gray"]), help: "how long each fault lasts"),
            OptionSpec("--warmup", .value("SECS"), scope: .only(["gray"]), help: "seconds before the fault starts"),
            OptionSpec("--keepalive", .value("SECS"), scope: .only(["gray"]), help: "the watchers' --keepalive"),
            OptionSpec(
                "--bound", .value("SECS"), scope: .only(["gray"]),
                help: "seconds the watchers may take to catch up"),
            OptionSpec("--timeout", .value("SECS"), scope: .only(["gray"]), help: "a writer's request deadline"),
            OptionSpec("--rate", .value("N"), scope: .only(["gray"]), help: "writes per second per writer at most"),
            OptionSpec(
                "--history", .value("N"), scope: .only(["gray"]),
                help: "the servers' --history for below-history"),
            OptionSpec("--disk-size", .value("MIB"), scope: .only(["gray"]), help: "the tmpfs of disk-full, in MiB"),
            OptionSpec(
                "--check-the-checks", scope: .only(["gray"]),
                help: "plant faults in copies of the records: exit 0 only when the checks count every one"),
            OptionSpec("--version", help: "the version, the protocol version, and the OpenSSL and SQLite versions"),
            OptionSpec("--help", aliases: ["-h"], help: "this help (after a mode: that mode's help)"),
        ],
        epilogue: """
            Exit status: 0 all checks passed, 1 a check failed or the harness could not run, 2 a usage error.
            """)
}
