#!/usr/bin/env bash
# Several memo-servers over one PostgreSQL: durable creates against one server (50 clients) and two servers (the
# same 50 clients, and 50 clients each) beside pgbench calling the project's own write function (the design's
# bound), cross-server delivery latency, and PostgreSQL connections per server. One run; prints one line per figure.
#
#   bench/postgres.sh             full run (about 2 minutes on 2 cores)
#   QUICK=1 bench/postgres.sh     smaller counts
#   FANOUT=1 bench/postgres.sh    the fan-out figures only, with where the delay goes, stage by stage
#   SUBS=20 bench/postgres.sh     another number of subscribers (1,000; 200 with QUICK)
#   MEMO_THREADS=1 bench/postgres.sh   each memo-server with --threads 1 (two servers sharing two cores)
#   N_REQ=20000 bench/postgres.sh      another number of creates per create run (40,000; 10,000 with QUICK)
#
# It starts a throwaway PostgreSQL (initdb into a temporary folder, as the postgres user when run as root,
# fsync on: the durable shapes are durable) on a free loopback port and stops everything when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

source bench/common.sh
find_postgres
# BIN=folder: that folder's memo-server and memo-bench (another build's, to alternate two in the same minutes).
if [ -z "${BIN:-}" ]; then swift build -c release >&2; BIN=.build/release; fi
if [ -n "${QUICK:-}" ]; then N_REQ=${N_REQ:-10000}; SECONDS_PG=5; SUBS=${SUBS:-200}; CHANGES_SLOW=200; CHANGES_FAST=1000
else N_REQ=${N_REQ:-40000}; SECONDS_PG=15; SUBS=${SUBS:-1000}; CHANGES_SLOW=1000; CHANGES_FAST=1000; fi

bench_workdir memo-pgbench
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

start_postgres
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"

# memo-server over database $1, with its stage trace written to $2 when it stops if given; appends to MEMO_ADDRS,
# MEMO_PIDS, MEMO_LOGS.
MEMO_ADDRS=(); MEMO_PIDS=(); MEMO_LOGS=()
start_memo() {
    local out="$WORK/memo-$RANDOM.out"
    MEMO_STAGE_TRACE="${2:-}" "$BIN/memo-server" serve --listen 127.0.0.1:0 --store "postgresql://memo@127.0.0.1:$PGPORT/$1" \
        --certs "$CERTS" ${MEMO_THREADS:+--threads "$MEMO_THREADS"} >"$out" 2>"$out.log" &
    PIDS+=("$!"); MEMO_PIDS+=("$!"); MEMO_LOGS+=("$out.log")
    for _ in $(seq 1 200); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
    MEMO_ADDRS+=("$(sed -n 's/^listening on //p' "$out")")
}
stop_memos() {
    for pid in "${MEMO_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    MEMO_ADDRS=(); MEMO_PIDS=()
}
bench_create() {  # servers (comma-separated) [clients, 50] -> creates per second, one in flight each
    "$BIN/memo-bench" --server "$1" --certs "$CERTS" --clients "${2:-50}" --requests "$N_REQ" --op create --json \
        | sed -n 's/.*"ops_per_sec":\([0-9.]*\).*/\1/p'
}
batches_of() {  # a stopped server's log -> write batches it sent
    sed -n 's/.*; \([0-9]*\) write batches sent to PostgreSQL.*/\1/p' "$1"
}

if [ -z "${FANOUT:-}" ]; then
# 1. Durable create c50 through one server, and the batch size it used.
"${PSQL[@]}" -d postgres -c "CREATE DATABASE one"
start_memo one
ONE=$(bench_create "${MEMO_ADDRS[0]}")
stop_memos
BATCHES=$(batches_of "${MEMO_LOGS[0]}")
CREATES=$("${PSQL[@]}" -d one -c "SELECT count(*) FROM memos")
# The bound's batch: the writes each flush carried (per claim; a build whose claim is each batch's: per batch).
CLAIMS=$(claims_of "${MEMO_LOGS[0]}"); CLAIMS=${CLAIMS:-$BATCHES}
BATCH=$(( (CREATES + CLAIMS / 2) / CLAIMS ))
WRITE_BATCH=$(( (CREATES + BATCHES / 2) / BATCHES ))

# 2. The same through two servers over one database.
"${PSQL[@]}" -d postgres -c "CREATE DATABASE two"
start_memo two; start_memo two
TWO=$(bench_create "${MEMO_ADDRS[0]},${MEMO_ADDRS[1]}")
stop_memos

# 2b. Two servers with 50 clients each: the clients grow with the servers.
"${PSQL[@]}" -d postgres -c "CREATE DATABASE twice"
start_memo twice; start_memo twice
TWICE=$(bench_create "${MEMO_ADDRS[0]},${MEMO_ADDRS[1]}" 100)
stop_memos

# 3. The design's bound: pgbench calling memo_write from one connection with the batch size the server used (the
# server's default version policy: versions kept, trash on).
TPS=$(pgbench_memo_write "$BATCH" "$SECONDS_PG" one)
BOUND=$(python3 -c "print(f'{$TPS * $BATCH:.1f}')")
fi

# 4. Cross-server delivery, subscribers spread over two servers, the writer on the first; connections per server.
"${PSQL[@]}" -d postgres -c "CREATE DATABASE fan"
# Each server keeps a stage trace (MEMO_STAGE_TRACE); the bench client writes its receipts beside them.
start_memo fan "$WORK/fan-0.trace"; start_memo fan "$WORK/fan-1.trace"
SERVERS="${MEMO_ADDRS[0]},${MEMO_ADDRS[1]}"
SLOW=$("$BIN/memo-bench" fanout --server "$SERVERS" --certs "$CERTS" --subscribers "$SUBS" \
    --changes "$CHANGES_SLOW" --rate 100 --receipts "$WORK/slow.receipts")
FAST=$("$BIN/memo-bench" fanout --server "$SERVERS" --certs "$CERTS" --subscribers "$SUBS" \
    --changes "$CHANGES_FAST" --rate 1000 --receipts "$WORK/fast.receipts")
# The same fan-out through one SQLite server at the same moment: the machine's own noise, for comparison.
"$BIN/memo-server" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/base.sqlite" --certs "$CERTS" \
    >"$WORK/base.out" 2>/dev/null &
BASE_PID=$!; PIDS+=("$BASE_PID")
for _ in $(seq 1 200); do grep -q "listening on" "$WORK/base.out" 2>/dev/null && break; sleep 0.05; done
BASE=$("$BIN/memo-bench" fanout --server "$(sed -n 's/^listening on //p' "$WORK/base.out")" --certs "$CERTS" \
    --subscribers "$SUBS" --changes "$CHANGES_SLOW" --rate 100)
kill "$BASE_PID"; wait "$BASE_PID" 2>/dev/null || true
CONNECTIONS=$("${PSQL[@]}" -d postgres -c \
    "SELECT string_agg(application_name || ' ' || n, ', ') FROM (SELECT application_name, count(*) AS n
     FROM pg_stat_activity WHERE datname = 'fan' GROUP BY 1 ORDER BY 1) c")
stop_memos

uptime
if [ -z "${FANOUT:-}" ]; then
    echo "durable create c50 P1, one server:        $ONE creates/s (about $WRITE_BATCH writes per memo_write call, $BATCH per durability claim)"
    echo "durable create c50 P1, two servers:       $TWO creates/s"
    echo "durable create c100 P1, two servers (50 clients each): $TWICE creates/s"
    echo "pgbench memo_write x$BATCH, one connection: $BOUND writes/s ($TPS calls/s)"
    python3 -c "print(f'one server / bound: {$ONE / $BOUND:.2f}; two servers / bound: {$TWO / $BOUND:.2f}; '
                      f'two servers, 50 clients each / one server, 50: {$TWICE / $ONE:.2f}; '
                      f'two servers, the same 50 / one server: {$TWO / $ONE:.2f}')"
fi
echo "fan-out at 100/s:"; echo "$SLOW" | sed 's/^/  /'
echo "fan-out at 1000/s:"; echo "$FAST" | sed 's/^/  /'
echo "fan-out at 100/s, one SQLite server (the same machine at the same moment):"; echo "$BASE" | sed 's/^/  /'
echo "PostgreSQL connections for two servers with $SUBS subscribers: $CONNECTIONS"
STAGES_SLOW=$(bench/stages.py "$WORK/slow.receipts" "$WORK"/fan-{0,1}.trace)
echo "where the delay goes at 100/s:"; echo "$STAGES_SLOW" | sed 's/^/  /'
# How the server that did not write got the changes of both fan-out runs: from notifications' payloads, or by reading
# the changes table (a deterministic count, whatever the load; a build before the payload carries none).
echo "changes the other server took from payloads / read from the table: $(grep -c ' carried ' "$WORK/fan-1.trace") /" \
    "$(grep -c ' read ' "$WORK/fan-1.trace")"
# The targets' ratios: the p99 of the subscribers on the server that did not take the write against one SQLite
# server's, and the cross-server hop (the other server's `applied` after the writer's `committed`, p50s).
python3 - "${SERVERS#*,}" "$SLOW" "$BASE" "$STAGES_SLOW" <<'PY'
import re, sys
other, slow, base, stages = sys.argv[1:]
p99 = lambda line: float(re.search(r"latency p50 [0-9.]+ ms p99 ([0-9.]+) ms", line).group(1))
cross = p99(next(l for l in slow.splitlines() if f"fanout on {other}:" in l))
sqlite = p99(base.splitlines()[0])
block = stages.split("(cross-server)")[1]
stage = lambda name: float(re.search(rf"^\s*{name}\s+([0-9.]+)", block, re.M).group(1))
print(f"cross-server p99 at 100/s: {cross:.1f} ms, one SQLite server: {sqlite:.1f} ms, ratio {cross / sqlite:.2f}; "
      f"cross-server hop (applied there after committed), p50: {stage('applied') - stage('committed'):.2f} ms")
PY
echo "where the delay goes at 1000/s:"; bench/stages.py "$WORK/fast.receipts" "$WORK"/fan-{0,1}.trace | sed 's/^/  /'
