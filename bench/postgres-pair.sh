#!/usr/bin/env bash
# Cross-server delivery of two builds at the same moments: each build's two memo-servers over its own database of
# one throwaway PostgreSQL, all four running, and memo-bench fanout alternating between the pairs round by round,
# so that a noisy machine's load falls on both alike. Prints each run's fan-out lines, then each build's medians of
# the other server's (cross-server) and the writer's own server's p50 and p99. Each server keeps a stage trace; the
# receipts and traces are left in OUT for bench/stages.py.
#
#   BASE=/tmp/base NEW=.build/release bench/postgres-pair.sh    folders holding memo-server (and memo-bench: NEW's)
#   ROUNDS=6 SUBS=20 CHANGES=300 RATE=100 OUT=/tmp/pair bench/postgres-pair.sh   (the defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?BASE=folder of the baseline build}" "${NEW:?NEW=folder of the build to compare}"
SUBS=${SUBS:-20}; ROUNDS=${ROUNDS:-6}; CHANGES=${CHANGES:-300}; RATE=${RATE:-100}; OUT=${OUT:-/tmp/pair}
mkdir -p "$OUT"
source bench/common.sh
find_postgres
bench_workdir memo-pair
start_postgres
"$NEW/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"
declare -A ADDR SERVER
for build in base new; do
    folder=$BASE; [ "$build" = new ] && folder=$NEW
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE pair_$build"
    for index in 0 1; do
        out="$WORK/$build-$index.out"
        MEMO_STAGE_TRACE="$OUT/$build-$index.trace" "$folder/memo-server" serve --listen 127.0.0.1:0 \
            --store "postgresql://memo@127.0.0.1:$PGPORT/pair_$build" --certs "$CERTS" >"$out" 2>"$out.log" &
        PIDS+=("$!"); SERVER[$build$index]=$!
        for _ in $(seq 1 200); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
        ADDR[$build$index]=$(sed -n 's/^listening on //p' "$out")
    done
done
for round in $(seq 1 "$ROUNDS"); do
    for build in base new; do
        echo "$build round $round, load $(cut -d' ' -f1 /proc/loadavg):"
        "$NEW/memo-bench" fanout --server "${ADDR[${build}0]},${ADDR[${build}1]}" --certs "$CERTS" \
            --subscribers "$SUBS" --changes "$CHANGES" --rate "$RATE" --receipts "$OUT/$build-$round.receipts" \
            | grep "fanout on" | sed "s/^/  /" | tee -a "$WORK/$build.lines"
    done
done
# The traces are written when the servers stop.
for key in "${!SERVER[@]}"; do kill "${SERVER[$key]}" 2>/dev/null || true; wait "${SERVER[$key]}" 2>/dev/null || true; done
python3 - "$WORK/base.lines" "$WORK/new.lines" <<'PY'
import re, statistics, sys
for name, path in zip(("base", "new"), sys.argv[1:]):
    own, cross = [], []
    for line in open(path):
        m = re.search(r"latency p50 ([0-9.]+) ms p99 ([0-9.]+) ms", line)
        (own if "writer's server" in line else cross).append((float(m.group(1)), float(m.group(2))))
    med = lambda rows, i: statistics.median(r[i] for r in rows)
    print(f"{name}: cross-server p50 {med(cross, 0):.1f} ms p99 {med(cross, 1):.1f} ms; "
          f"the writer's own server p50 {med(own, 0):.1f} ms p99 {med(own, 1):.1f} ms (medians of {len(cross)} runs)")
PY
