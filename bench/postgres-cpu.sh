#!/usr/bin/env bash
# Where several memo-servers' time goes over one PostgreSQL: CPU per create of each process group (the memo-servers,
# the PostgreSQL processes, memo-bench; from /proc/PID/stat, so the machine's load does not move it), the statements
# memo_write runs and their time (pg_stat_statements, track all), the client backends' wait events sampled every
# 20 ms, the batches per claim, and the WAL's flushes (pg_stat_wal: how many, how long each, and the writes each
# covered). One server with 50 clients; pgbench calling memo_write from one connection with the writes per claim the
# server had (the design's bound in bench/postgres.sh), with its own flushes; then two servers with 50 clients each;
# last, one server with 50 clients again, stage-traced: where its write spends its time, step by step
# (bench/write-stages.py).
#
#   BIN=.build/release N_REQ=20000 bench/postgres-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release}; N_REQ=${N_REQ:-20000}
source bench/common.sh
find_postgres
bench_workdir memo-pgcpu
start_postgres -c shared_preload_libraries=pg_stat_statements,auto_explain -c pg_stat_statements.track=all \
    -c track_wal_io_timing=on \
    ${EXPLAIN:+-c auto_explain.log_min_duration=$EXPLAIN -c auto_explain.log_nested_statements=on -c auto_explain.log_analyze=on}
"${PSQL[@]}" -d postgres -c "CREATE EXTENSION pg_stat_statements; CREATE TABLE waits (n int, app text, state text, wtype text, wevent text, q text)"
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"

ticks() {  # pids... -> utime+stime of each and, for the postmaster, its children (all in clock ticks)
    local total=0
    for pid in "$@"; do
        for p in $pid $(pgrep -P "$pid" 2>/dev/null || true); do
            # A process may exit between its listing and the read: it then counts nothing.
            local t; t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true)
            total=$((total + ${t:-0}))
        done
    done
    echo "$total"
}
sample_waits() {  # samples the client backends' wait events every 20 ms until killed
    "${PSQL[@]}" -d postgres -c "DO \$\$ BEGIN FOR i IN 1..100000 LOOP PERFORM pg_stat_clear_snapshot();
        INSERT INTO waits SELECT i, application_name, state, wait_event_type, wait_event, left(query, 40)
        FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname <> 'postgres'; COMMIT;
        PERFORM pg_sleep(0.02); END LOOP; END \$\$" >/dev/null 2>&1 || true
}

wal_reset() { "${PSQL[@]}" -d postgres -c "SELECT pg_stat_reset_shared('wal')" >/dev/null; }
wal_report() {  # writes seconds -> the WAL's flushes since wal_reset: rate, mean time, writes each, share of the wall
    "${PSQL[@]}" -d postgres -c "SELECT '  WAL flushes (pg_stat_wal): ' || wal_sync || ', ' || round(wal_sync / $2, 0)
        || '/s, ' || round((wal_sync_time / greatest(wal_sync, 1))::numeric, 3) || ' ms each, busy '
        || round((wal_sync_time / 10 / $2)::numeric, 0) || '% of the wall, ' || round($1::numeric / greatest(wal_sync, 1), 1)
        || ' writes per flush, ' || round(wal_bytes / greatest($1, 1)) || ' WAL bytes per write' FROM pg_stat_wal"
}

run() {  # label database servers clients [stage trace of the first server]
    local label=$1 db=$2 n=$3 clients=$4 trace=${5:-} servers=() addrs=() logs=()
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE $db"; "${PSQL[@]}" -d postgres -c "TRUNCATE waits"
    "${PSQL[@]}" -d "$db" -c "SELECT 1" >/dev/null
    for i in $(seq 1 "$n"); do
        local out="$WORK/$db-$i"
        MEMO_STAGE_TRACE=$([ "$i" = 1 ] && echo "$trace" || true) \
            "$BIN/memo-server" serve --listen 127.0.0.1:0 --store "postgresql://memo@127.0.0.1:$PGPORT/$db" \
            --certs "$CERTS" >"$out.out" 2>"$out.log" &
        PIDS+=("$!"); servers+=("$!"); logs+=("$out.log")
        for _ in $(seq 1 200); do grep -q "listening on" "$out.out" 2>/dev/null && break; sleep 0.05; done
        addrs+=("$(sed -n 's/^listening on //p' "$out.out")")
    done
    "${PSQL[@]}" -d postgres -c "SELECT pg_stat_statements_reset()" >/dev/null
    sample_waits & local sampler=$!; PIDS+=("$sampler")
    wal_reset
    local s0 p0 t0; s0=$(ticks "${servers[@]}"); p0=$(ticks "$PG_PID"); t0=$(date +%s.%N)
    "$BIN/memo-bench" --server "$(IFS=,; echo "${addrs[*]}")" --certs "$CERTS" --clients "$clients" \
        --requests "$N_REQ" --op create --json >"$WORK/$db.json" &
    local bench=$!; local b1=0
    while kill -0 "$bench" 2>/dev/null; do local t; t=$(ticks "$bench"); [ "$t" -gt 0 ] && b1=$t; sleep 0.1; done
    wait "$bench"
    local s1 p1 t1; s1=$(ticks "${servers[@]}"); p1=$(ticks "$PG_PID"); t1=$(date +%s.%N)
    "${PSQL[@]}" -d postgres -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO %'" >/dev/null
    wait "$sampler" 2>/dev/null || true
    for pid in "${servers[@]}"; do stop_pid "$pid"; done
    # The servers' backends report their table statistics when they exit.
    for _ in $(seq 1 100); do
        [ "$("${PSQL[@]}" -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'")" = 0 ] && break
        sleep 0.1
    done
    local creates rate hz; creates=$("${PSQL[@]}" -d "$db" -c "SELECT count(*) FROM memos"); hz=$(getconf CLK_TCK)
    rate=$(sed -n 's/.*"ops_per_sec":\([0-9.]*\).*/\1/p' "$WORK/$db.json")
    echo "== $label: $rate creates/s, $creates creates, load $(cut -d' ' -f1-3 /proc/loadavg)"
    python3 -c "
hz, n = $hz, $creates
for name, t in (('memo-servers', $s1 - $s0), ('postgres (all)', $p1 - $p0), ('memo-bench', $b1)):
    print(f'  CPU per create, {name}: {t / hz / n * 1e6:.1f} us')
print(f'  wall {$t1 - $t0:.2f} s; CPU use of the 2 cores: {($s1 - $s0 + $p1 - $p0 + $b1) / hz / ($t1 - $t0) / 2 * 100:.0f}%')"
    wal_report "$creates" "$(python3 -c "print($t1 - $t0)")"
    for log in "${logs[@]}"; do
        echo "  $(grep -o '[0-9]* write batches sent to PostgreSQL since start, [0-9]* durability claims' "$log" || true)"
    done
    LAST_CREATES=$creates
    LAST_CLAIMS=$(claims_of "${logs[0]}" | tail -1)
    echo "  memo_changes rows read per create (pg_stat_user_tables; does not move with the load): $("${PSQL[@]}" -d "$db" -c \
        "SELECT 'by sequential scans ' || round(seq_tup_read::numeric / $creates, 1) || ' (' || seq_scan || ' scans), by index '
         || round(idx_tup_fetch::numeric / $creates, 1) FROM pg_stat_user_tables WHERE relname = 'memo_changes'")"
    echo "  wait events of client backends (share of samples, by connection):"
    "${PSQL[@]}" -d postgres -F ' | ' -c "SELECT app, coalesce(wtype || ':' || wevent, 'CPU') AS w, state, count(*),
        round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY app), 1) FROM waits WHERE state <> 'idle'
        OR wevent IS DISTINCT FROM 'ClientRead' GROUP BY 1, 2, 3 ORDER BY 1, 4 DESC" | sed 's/^/    /'
    "${PSQL[@]}" -d postgres -F ' | ' -c "SELECT app, round(100.0 * count(*) FILTER (WHERE state = 'active')
        / count(*), 1) || '% active' FROM waits GROUP BY 1" | sed 's/^/    /'
    echo "  statements (pg_stat_statements: calls, total ms, mean us, per create us):"
    "${PSQL[@]}" -d postgres -F ' | ' -c "SELECT calls, round(total_exec_time::numeric, 0), round((1000 * mean_exec_time)::numeric, 1),
        round((1000 * total_exec_time / $creates)::numeric, 2), regexp_replace(left(query, 90), '\s+', ' ', 'g')
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
        ORDER BY total_exec_time DESC LIMIT 16" | sed 's/^/    /'
}
run "one server, 50 clients" one 1 50
# The bound: one connection, each call its writes and its flush, as many writes per call as the server had per claim.
BATCH=$(( (LAST_CREATES + LAST_CLAIMS / 2) / LAST_CLAIMS ))
wal_reset
TPS=$(pgbench_memo_write "$BATCH" 5 one)
echo "== pgbench memo_write x$BATCH, one connection: $(python3 -c "print(round($TPS * $BATCH))") writes/s ($TPS calls/s)"
wal_report "$(python3 -c "print(round($TPS * $BATCH * 5))")" 5
run "two servers, 50 clients each" twice 2 100
# Where one server's write spends its time, step by step (a run of its own: the trace's records cost a little).
run "one server, 50 clients, stage-traced" traced 1 50 "$WORK/traced.trace" >"$WORK/traced.report"
head -1 "$WORK/traced.report"
bench/write-stages.py "$WORK/traced.trace" | sed 's/^/  /'
# EXPLAIN=ms: the plans of the statements that took longer (auto_explain, nested ones too), the slowest ones.
if [ -n "${EXPLAIN:-}" ]; then grep -A12 "duration:" "$WORK/pg.log" | grep -v "^--$" | tail -${EXPLAIN_LINES:-80}; fi
[ -z "${PG_LOG:-}" ] || cp "$WORK/pg.log" "$PG_LOG"
