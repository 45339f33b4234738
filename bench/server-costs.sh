#!/usr/bin/env bash
# What one request costs memo-server besides its CPU time: context switches, page faults and allocations, for
# durable create (SQLite) and get (memory store), c50 P1 over TLS on loopback.
#
#   bench/server-costs.sh              N=50000 requests per shape
#   N=20000 bench/server-costs.sh      fewer
#
# Context switches, page faults and CPU come from `perf stat -p` on the server over one memo-bench run (perf is
# installed from Debian's linux-perf when missing; without it the columns say so). Allocations are counted by an
# LD_PRELOAD library (bench/malloc-count.c) in a second server: a run of N and one of 3N requests, the difference
# divided by 2N, so that the 50 handshakes of each run cancel out. Figures on a shared machine are noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
N=${N:-50000}
swift build -c release --product memo-server >&2
swift build -c release --product memo-bench >&2
BIN=.build/release
source bench/common.sh
bench_workdir memo-costs
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf \
    >/dev/null 2>&1 || true; }
cc -O2 -shared -fPIC -o "$WORK/malloc-count.so" bench/malloc-count.c
CERTS="$WORK/certs"
"$BIN/memo-server" certs init --dir "$CERTS" >/dev/null

bench() {  # op requests
    "$BIN/memo-bench" --server "$MEMO_ADDR" --certs "$CERTS" --clients 50 --pipeline 1 --requests "$2" \
        --op "$1" --json | tail -1
}
mallocs() { kill -USR2 "$MEMO_PID"; sleep 0.3; grep MALLOCS "$MEMO_LOG.err" | tail -1 | cut -d' ' -f2; }

printf '%-34s %10s %10s %10s %10s %12s\n' "shape ($N requests)" "req/s" "cs/req" "faults/req" "CPU µs/req" \
    "allocs/req"
for shape in "durable create" "get"; do
    if [ "$shape" = get ]; then store=memory op=get; else store="sqlite:$WORK/db-$RANDOM/memos.sqlite" op=create; fi
    start_memo "$store"
    bench create 2000 >/dev/null  # memos for get to find, and a warm server
    rate="-" cs="-" faults="-" cpu="-"
    if command -v perf >/dev/null; then
        perf stat -e context-switches,page-faults,task-clock -x, -o "$WORK/perf" -p "$MEMO_PID" &
        perf_pid=$!
        sleep 0.3
        rate=$(bench "$op" "$N" | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['ops_per_sec'])")
        kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
        read -r cs faults cpu < <(awk -F, -v n="$N" '/context-switches/ {c=$1} /page-faults/ {f=$1}
            /task-clock/ {t=$1} END {printf "%.3f %.3f %.1f\n", c/n, f/n, t*1000/n}' "$WORK/perf")
    else
        rate=$(bench "$op" "$N" | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['ops_per_sec'])")
    fi
    stop_pid "$MEMO_PID"
    if [ "$shape" = get ]; then store=memory; else store="sqlite:$WORK/db-$RANDOM/memos.sqlite"; fi
    start_memo "$store" "$WORK/malloc-count.so"
    bench create 2000 >/dev/null
    bench "$op" 2000 >/dev/null
    a=$(mallocs); bench "$op" "$N" >/dev/null; b=$(mallocs); bench "$op" $((N * 3)) >/dev/null; c=$(mallocs)
    stop_pid "$MEMO_PID"
    allocs=$(python3 -c "print(f'{(($c - $b) - ($b - $a)) / (2 * $N):.2f}')")
    printf '%-34s %10s %10s %10s %10s %12s\n' "$shape c50 P1" "$rate" "$cs" "$faults" "$cpu" "$allocs"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
