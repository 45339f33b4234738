#!/usr/bin/env bash
# Versions kept (memo-server --versions 50, the default) against none (--versions 0), on SQLite (synchronous=FULL):
#   1. durable create and update, 50 clients, pipeline 1: ops/s of each, in the same run, ROUNDS rounds with the
#      order of the two alternating, medians and the ratio on/off (target >= 0.95);
#   2. the store's bytes per version for 64-byte memos: MEMOS memos updated UPDATES times each with --history
#      small, K=50 against K=0, the file size difference divided by the versions kept;
#   3. memo-client log of a memo with 50 versions: wall time of the whole command (connect, TLS, hello, one history
#      request), median of 10.
# Usage: bench/versions.sh (BIN=.build/release by default; N_REQ, ROUNDS, MEMOS, UPDATES to change the sizes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release}
source bench/common.sh
bench_workdir memo-versions
CERTS=$WORK/certs
"$BIN/memo-server" certs init --dir "$CERTS" >/dev/null
N_REQ=${N_REQ:-4000}
ROUNDS=${ROUNDS:-3}
MEMOS=${MEMOS:-1000}
UPDATES=${UPDATES:-20}

# start_server STORE VERSIONS [HISTORY]: as start_memo, with --versions and --history.
start_server() {
    MEMO_LOG="$WORK/memo-$RANDOM"
    "$BIN/memo-server" serve --listen 127.0.0.1:0 --store "$1" --certs "$CERTS" --versions "$2" \
        --history "${3:-100000}" >"$MEMO_LOG.out" 2>"$MEMO_LOG.err" &
    MEMO_PID=$!
    PIDS+=("$MEMO_PID")
    for _ in $(seq 1 200); do grep -q "listening on" "$MEMO_LOG.out" 2>/dev/null && break; sleep 0.05; done
    MEMO_ADDR=$(sed -n 's/^listening on //p' "$MEMO_LOG.out")
}
json_field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.1f}')" "$@"; }
bench() { "$BIN/memo-bench" --server "$MEMO_ADDR" --certs "$CERTS" --clients 50 --pipeline 1 --requests "$N_REQ" \
    --op "$1" --json | json_field ops_per_sec; }

declare -A RESULTS
for round in $(seq 1 "$ROUNDS"); do
    order=(50 0); [ $((round % 2)) = 0 ] && order=(0 50)
    for k in "${order[@]}"; do
        start_server "sqlite:$WORK/k$k-$round/memos.sqlite" "$k"
        create=$(bench create)
        update=$(bench update)
        stop_pid "$MEMO_PID"
        echo "   round $round --versions $k: create $create/s update $update/s" >&2
        RESULTS[create-$k]+="$create "
        RESULTS[update-$k]+="$update "
    done
done
for op in create update; do
    on=$(median ${RESULTS[$op-50]}); off=$(median ${RESULTS[$op-0]})
    ratio=$(python3 -c "print(f'{$on/$off:.3f}')")
    echo "durable $op c50 P1: versions 50 $on ops/s, versions 0 $off ops/s, ratio $ratio (target >= 0.95)"
done

# Bytes per version: the same writes with K=50 and K=0, the change history bounded to 1000.
size_for() {
    start_server "sqlite:$WORK/size-$1/memos.sqlite" "$1" 1000
    python3 - "$MEMO_ADDR" "$CERTS" "$MEMOS" "$UPDATES" "$BIN" <<'PY'
import json, subprocess, sys
addr, certs, memos, updates, bin = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
base = [bin + "/memo-client", "--server", addr, "--certs", certs]
lines = "".join(json.dumps({"id": "%08x-0000-4000-8000-%012x" % (0, i), "content": "x" * 64,
                            "insertDate": "2026-01-01T00:00:00.%06dZ" % i}) + "\n" for i in range(memos))
subprocess.run(base + ["import", "-"], input=lines.encode(), check=True, stdout=subprocess.DEVNULL)
PY
    "$BIN/memo-bench" --server "$MEMO_ADDR" --certs "$CERTS" --clients 10 --pipeline 8 \
        --requests $((MEMOS * UPDATES)) --op update --json >/dev/null
    stop_pid "$MEMO_PID"
    python3 - "$WORK/size-$1/memos.sqlite" <<'PY'
import sqlite3, sys, os
db = sqlite3.connect(sys.argv[1]); db.execute("PRAGMA wal_checkpoint(TRUNCATE)"); db.execute("VACUUM")
kept = db.execute("SELECT count(*) FROM changes WHERE version BETWEEN 1 AND 3").fetchone()[0]
db.close()
print(os.path.getsize(sys.argv[1]), kept)
PY
}
read -r size_on kept_on <<<"$(size_for 50)"
read -r size_off kept_off <<<"$(size_for 0)"
python3 -c "
on, off, kon, koff = $size_on, $size_off, $kept_on, $kept_off
print(f'store size, 64-byte memos: versions 50 {on} bytes ({kon} versions kept), versions 0 {off} bytes ({koff}); '
      f'{(on - off) / max(kon - koff, 1):.1f} bytes per version')"

# memo-client log of a memo with 50 versions.
start_server "sqlite:$WORK/log/memos.sqlite" 50
CLIENT=("$BIN/memo-client" --server "$MEMO_ADDR" --certs "$CERTS")
id=$(MEMO_EXPIRY_WARNING=0 "${CLIENT[@]}" add -o ids "version 1")
for i in $(seq 2 50); do MEMO_EXPIRY_WARNING=0 "${CLIENT[@]}" edit -q "$id" "version $i"; done
python3 - "$id" "${CLIENT[@]}" <<'PY'
import os, statistics, subprocess, sys, time
memo_id, client = sys.argv[1], sys.argv[2:]
env = dict(os.environ, MEMO_EXPIRY_WARNING="0")
times = []
for _ in range(10):
    start = time.perf_counter()
    out = subprocess.run(client + ["log", memo_id], env=env, check=True, capture_output=True).stdout
    times.append((time.perf_counter() - start) * 1000)
assert len(out.splitlines()) == 50, out
print(f"memo-client log of 50 versions: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms "
      f"(10 runs, the whole command: process start, TLS, hello, one history request)")
PY
stop_pid "$MEMO_PID"
