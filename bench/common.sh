# Shared by the bench scripts (sourced, not run): a work folder removed at exit with every process the script
# started, a free loopback port, and starting and stopping a memo-server.
#
#   bench_workdir PREFIX   sets WORK (a new folder under /tmp) and PIDS, and traps EXIT, INT and TERM to kill
#                          every pid in PIDS, call bench_cleanup_hook if the script defines one, and remove WORK
#   free_port              prints a free TCP port on 127.0.0.1
#   start_memo STORE [LD_PRELOAD]
#                          starts $BIN/memo-server on 127.0.0.1:0 with STORE and the certificates in $CERTS; sets
#                          MEMO_PID, MEMO_ADDR (from its "listening on" line) and MEMO_LOG (its stdout is
#                          $MEMO_LOG.out, its stderr $MEMO_LOG.err); MEMO_SERVE_ARGS adds serve flags
#   stop_pid PID           stops a process and waits for it
#   start_redis DURABLE    starts redis-server with mutual TLS on a free loopback port with the certificates in
#                          $CERTS, after bench_workdir; DURABLE=1 turns on appendfsync always, 0 no persistence;
#                          sets REDIS_PORT and REDIS_PID
#   wait_for_redis PORT TRIES PAUSE
#                          pings the TLS redis-server on PORT (certificates in $CERTS) until it answers, at most
#                          TRIES times PAUSE seconds apart
#   find_postgres          sets PGBIN (the newest installed PostgreSQL's programs), or exits saying it is missing
#   start_postgres [SETTING...]
#                          a throwaway PostgreSQL, after bench_workdir: initdb into $WORK/data (as the postgres user
#                          when run as root, which initdb requires), started on a free loopback port with the
#                          settings given (each "-c name=value"), stopped when the script ends; sets PGPORT, PG_PID
#                          and PSQL (psql as the superuser memo, unaligned, stopping at the first error)
#   pgbench_memo_write BATCH SECONDS DATABASE
#                          the design's bound: pgbench calling memo_write with BATCH creates from one connection;
#                          prints its calls per second
#   claims_of LOG          the durability claims a stopped PostgreSQL-backed memo-server logged

bench_workdir() {
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if declare -F bench_cleanup_hook >/dev/null; then bench_cleanup_hook; fi
    rm -rf "$WORK"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_memo() {
    MEMO_LOG="$WORK/memo-$RANDOM"
    # shellcheck disable=SC2086 # MEMO_SERVE_ARGS is a list of flags
    LD_PRELOAD=${2:-} "$BIN/memo-server" serve --listen 127.0.0.1:0 --store "$1" --certs "$CERTS" ${MEMO_SERVE_ARGS:-} \
        >"$MEMO_LOG.out" 2>"$MEMO_LOG.err" &
    MEMO_PID=$!
    PIDS+=("$MEMO_PID")
    for _ in $(seq 1 200); do grep -q "listening on" "$MEMO_LOG.out" 2>/dev/null && break; sleep 0.05; done
    MEMO_ADDR=$(sed -n 's/^listening on //p' "$MEMO_LOG.out")
}

stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

start_redis() {
    local durable=$1 dir
    dir=$(mktemp -d "$WORK/redis.XXXX")
    REDIS_PORT=$(free_port)
    local persistence=(--save "" --appendonly no)
    [ "$durable" = 1 ] && persistence=(--save "" --appendonly yes --appendfsync always)
    redis-server --port 0 --tls-port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir" \
        --tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" \
        --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients yes --maxclients 20000 \
        "${persistence[@]}" --daemonize no --logfile "$dir/redis.log" &
    REDIS_PID=$!
    PIDS+=("$REDIS_PID")
    wait_for_redis "$REDIS_PORT" 200 0.05
}

wait_for_redis() {
    for _ in $(seq 1 "$2"); do
        redis-cli --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
            -p "$1" ping >/dev/null 2>&1 && return
        sleep "$3"
    done
}

find_postgres() {
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -x "$PGBIN/pg_ctl" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
}

start_postgres() {
    [ -n "${PGBIN:-}" ] || find_postgres
    chmod 755 "$WORK"
    AS_PG=()
    if [ "$(id -u)" = 0 ]; then chown postgres "$WORK"; AS_PG=(runuser -u postgres --); fi
    bench_cleanup_hook() { "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null 2>&1 || true; }
    PGPORT=$(free_port)
    "${AS_PG[@]}" "$PGBIN/initdb" -D "$WORK/data" -U memo --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/pg.log" -w \
        -o "-p $PGPORT -k $WORK -c listen_addresses=127.0.0.1 $*" start >/dev/null
    PG_PID=$(head -1 "$WORK/data/postmaster.pid")
    PSQL=("$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U memo)
}

# Creates of 64 bytes, the server's default version policy (versions kept, trash on), each call one transaction that
# writes and flushes.
pgbench_memo_write() {
    local content keep
    content=$(python3 -c "print(('x' * 64).encode().hex())")
    keep=$(sed -n 's/.*static let defaultKeep = \([0-9]*\).*/\1/p' Sources/MemoModel/Versions.swift)
    cat >"$WORK/write.sql" <<EOF
SELECT count(*) FROM memo_write(array_fill(1::smallint, ARRAY[$1]),
    ARRAY(SELECT gen_random_uuid() FROM generate_series(1, $1)),
    array_fill('\\x$content'::bytea, ARRAY[$1]), array_fill(NULL::bigint, ARRAY[$1]),
    array_fill(NULL::bigint, ARRAY[$1]), array_fill(NULL::bigint, ARRAY[$1]), (extract(epoch FROM clock_timestamp()) * 1e6)::bigint,
    9223372036854775807, array_fill(''::text, ARRAY[$1]), array_fill(''::text, ARRAY[$1]),
    array_fill(NULL::bigint, ARRAY[$1]), array_fill(false, ARRAY[$1]), $keep, true);
EOF
    "$PGBIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U memo -c 1 -T "$2" -f "$WORK/write.sql" "$3" 2>/dev/null \
        | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

claims_of() {
    sed -n 's/.*write batches sent to PostgreSQL since start, \([0-9]*\) durability claims.*/\1/p' "$1"
}
