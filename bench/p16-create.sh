#!/usr/bin/env bash
# In-memory create c50 P16 (`bench/compare.sh`'s shape) against two or more memo-server binaries, alternating on
# fresh servers, with what the server spent: `perf stat -e task-clock,page-faults -p` on the server over the run
# (deterministic enough on a loaded machine where creates/s is not) and its peak RSS after it.
#
#   bench/p16-create.sh OLD/memo-server NEW/memo-server            3 rounds of 200,000 creates each
#   ROUNDS=5 N=400000 bench/p16-create.sh A B                      more
#   SERVER_ARGS="--versions 0" bench/p16-create.sh A B             options for every server
#
# memo-bench is this tree's release build (built when missing). Each line says the load average at its start.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,10p "$0"; exit 2; }
SERVERS=()
for server in "$@"; do SERVERS+=("$(realpath "$server")"); done
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
ROUNDS=${ROUNDS:-3}; N=${N:-200000}; SERVER_ARGS=${SERVER_ARGS:-}
[ -x .build/release/memo-bench ] || swift build -c release --product memo-bench >&2
BENCH=$PWD/.build/release/memo-bench
command -v perf >/dev/null || { echo "perf is needed (Debian's linux-perf)" >&2; exit 1; }
source bench/common.sh
bench_workdir memo-p16
CERTS="$WORK/certs"
"${SERVERS[0]}" certs init --dir "$CERTS" >/dev/null

printf '%-5s %-6s %10s %14s %12s %14s %13s  %s\n' round load "creates/s" "task-clock ms" "page faults" \
    "faults/create" "peak RSS MiB" server
for round in $(seq 1 "$ROUNDS"); do
    for index in "${!SERVERS[@]}"; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        BIN="$WORK/bin-$index"
        # A wrapper that execs the server with SERVER_ARGS added (the same pid, for start_memo and perf).
        mkdir -p "$BIN"
        printf '#!/bin/sh\nexec %q "$@" %s\n' "${SERVERS[$index]}" "$SERVER_ARGS" >"$BIN/memo-server"
        chmod +x "$BIN/memo-server"
        start_memo memory
        perf stat -e task-clock,page-faults -x, -o "$WORK/perf" -p "$MEMO_PID" &
        perf_pid=$!
        sleep 0.3
        rate=$("$BENCH" --server "$MEMO_ADDR" --certs "$CERTS" --clients 50 --pipeline 16 --requests "$N" \
            --op create --json | tail -1 | python3 -c "import json,sys; print(int(json.loads(sys.stdin.read())['ops_per_sec']))")
        kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
        rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$MEMO_PID/status")
        stop_pid "$MEMO_PID"
        read -r clock faults < <(awk -F, '/task-clock/ {t=$1} /page-faults/ {f=$1} END {printf "%.0f %d\n", t, f}' \
            "$WORK/perf")
        printf '%-5s %-6s %10s %14s %12s %14.3f %13s  %s\n' "$round" "$load" "$rate" "$clock" "$faults" \
            "$(python3 -c "print($faults/$N)")" "$rss" "${SERVERS[$index]}"
    done
done
