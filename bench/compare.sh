#!/usr/bin/env bash
# memo-server against Redis, both over TLS on loopback, the same shapes in one run; prints a table of ratios.
#
#   bench/compare.sh            full run (about 5-8 minutes on 2 cores: the fan-out knee steps the rate)
#   QUICK=1 bench/compare.sh    smaller counts, for a smoke run
#   ROUNDS=5 bench/compare.sh   more rounds of the request shapes (default 3; the table shows medians)
#
# It installs redis-server and redis-tools from Debian's packages when missing, builds the release binaries,
# starts every server it needs on free loopback ports and stops them all when it ends (also on Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server redis-tools" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi
swift build -c release >&2
BIN=.build/release
QUICK=${QUICK:-}
if [ -n "$QUICK" ]; then N_REQ=20000; N_PIPE=100000; CHANGES=200; SUBS=200; CONNS=1000
else N_REQ=100000; N_PIPE=400000; CHANGES=1000; SUBS=1000; CONNS=10000; fi

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
source bench/common.sh
bench_workdir memo-compare
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"

redis_bench() {  # test clients pipeline requests -> requests per second
    redis-benchmark --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
        -h 127.0.0.1 -p "$REDIS_PORT" -t "$1" -c "$2" -P "$3" -n "$4" -d 64 -r 1000 --csv -q 2>/dev/null \
        | awk -F'"' -v t="$(echo "$1" | tr a-z A-Z)" '$2==t {print $4}'
}
json_field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

ROWS=()
row() { ROWS+=("$1|$2|$3|$4|$5"); }  # shape | memo | redis | ratio | target

# The request shapes run ROUNDS times, memo and Redis alternating on fresh servers, and the table shows the median
# of each side (every round's figure is printed on stderr): one round's figures move by 10% or more on a shared VM.
ROUNDS=${ROUNDS:-3}
DURABLE_M=(); DURABLE_R=(); GET_M=(); GET_R=(); PIPE_M=(); PIPE_R=()
median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.1f}')" "$@"; }
for round in $(seq 1 "$ROUNDS"); do
    echo "== round $round of $ROUNDS: durable create c50 P1 (SQLite, synchronous=FULL) vs SET (appendfsync always)" >&2
    start_memo "sqlite:$WORK/durable-$round/memos.sqlite"
    memo=$("$BIN/memo-bench" --server "$MEMO_ADDR" --certs "$CERTS" --clients 50 --pipeline 1 --requests "$N_REQ" --op create --json | json_field ops_per_sec)
    stop_pid "$MEMO_PID"
    start_redis 1
    redis=$(redis_bench set 50 1 "$N_REQ")
    stop_pid "$REDIS_PID"
    echo "   memo $memo  redis $redis" >&2
    DURABLE_M+=("$memo"); DURABLE_R+=("$redis")

    start_memo memory
    MEM_ADDR=$MEMO_ADDR; MEM_PID=$MEMO_PID
    start_redis 0
    echo "== round $round of $ROUNDS: get c50 P1" >&2
    memo=$("$BIN/memo-bench" --server "$MEM_ADDR" --certs "$CERTS" --clients 50 --pipeline 1 --requests "$N_REQ" --op get --json | json_field ops_per_sec)
    redis_bench set 50 16 "$N_REQ" >/dev/null
    redis=$(redis_bench get 50 1 "$N_REQ")
    echo "   memo $memo  redis $redis" >&2
    GET_M+=("$memo"); GET_R+=("$redis")

    echo "== round $round of $ROUNDS: in-memory create c50 P16" >&2
    memo=$("$BIN/memo-bench" --server "$MEM_ADDR" --certs "$CERTS" --clients 50 --pipeline 16 --requests "$N_PIPE" --op create --json | json_field ops_per_sec)
    redis=$(redis_bench set 50 16 "$N_PIPE")
    echo "   memo $memo  redis $redis" >&2
    PIPE_M+=("$memo"); PIPE_R+=("$redis")
    stop_pid "$MEM_PID"; stop_pid "$REDIS_PID"
done
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
memo=$(median "${DURABLE_M[@]}"); redis=$(median "${DURABLE_R[@]}")
row "durable create c50 P1 (ops/s)" "$memo" "$redis" "$(ratio "$memo" "$redis")" ">= 1.0"
memo=$(median "${GET_M[@]}"); redis=$(median "${GET_R[@]}")
row "get c50 P1 (ops/s)" "$memo" "$redis" "$(ratio "$memo" "$redis")" ">= 1.3"
memo=$(median "${PIPE_M[@]}"); redis=$(median "${PIPE_R[@]}")
row "in-memory create c50 P16 (ops/s)" "$memo" "$redis" "$(ratio "$memo" "$redis")" ">= 0.8"

# Fan-out, measured below saturation: (a) p99 and server CPU per delivery at FANOUT_RATE changes/s, a rate both
# servers sustain with 1,000 subscribers on two shared cores; (b) the knee: starting at KNEE_START changes/s and
# stepping the rate up by half each time, the highest rate whose p99 stays <= 50 ms with no delivery missing
# (each step a fresh server, about KNEE_SECONDS of changes). A p99 taken where a server saturates is queueing.
FANOUT_RATE=${FANOUT_RATE:-20}; KNEE_START=${KNEE_START:-10}; KNEE_MAX=${KNEE_MAX:-3000}; KNEE_SECONDS=${KNEE_SECONDS:-4}
fanout_memo() {  # rate changes -> the JSON line
    start_memo memory
    "$BIN/memo-bench" fanout --server "$MEMO_ADDR" --certs "$CERTS" --subscribers "$SUBS" --changes "$2" \
        --rate "$1" --server-pid "$MEMO_PID" --json | tail -1
    stop_pid "$MEMO_PID"
}
fanout_redis() {
    start_redis 0
    "$BIN/memo-bench" redis-fanout --server "127.0.0.1:$REDIS_PORT" --certs "$CERTS" --subscribers "$SUBS" \
        --changes "$2" --rate "$1" --server-pid "$REDIS_PID" --json | tail -1
    stop_pid "$REDIS_PID"
}
knee_step() {  # fanout_memo|fanout_redis rate -> success when its p99 <= 50 ms and nothing is missing
    local json p99 missing
    json=$($1 "$2" "$(( $2 * KNEE_SECONDS > 50 ? $2 * KNEE_SECONDS : 50 ))")
    p99=$(echo "$json" | json_field p99_ms); missing=$(echo "$json" | json_field missing)
    echo "   ${1#fanout_} $2/s: p99 $p99 ms, $missing missing" >&2
    python3 -c "import sys; sys.exit(0 if $p99 <= 50 and $missing == 0 else 1)"
}
knee() {  # fanout_memo|fanout_redis -> the highest rate that passed (0 if none down to 1/s did)
    local run=$1 rate=$KNEE_START passed=0
    # On a loaded machine the first rate may already fail: halve it until one passes.
    while [ "$rate" -gt 1 ] && ! knee_step "$run" "$rate"; do rate=$(( rate / 2 )); done
    [ "$rate" -gt 1 ] || knee_step "$run" 1 || { echo 0; return; }
    passed=$rate
    rate=$(( rate * 3 / 2 > rate + 1 ? rate * 3 / 2 : rate + 1 ))
    while [ "$rate" -le "$KNEE_MAX" ] && knee_step "$run" "$rate"; do
        passed=$rate
        rate=$(( rate * 3 / 2 ))
    done
    echo "$passed"
}
echo "== fan-out to $SUBS subscribers at $FANOUT_RATE changes/s" >&2
memo_json=$(fanout_memo "$FANOUT_RATE" "$(( FANOUT_RATE * 10 ))")
redis_json=$(fanout_redis "$FANOUT_RATE" "$(( FANOUT_RATE * 10 ))")
for field in p99_ms server_cpu_us_per_delivery; do
    m=$(echo "$memo_json" | json_field "$field"); r=$(echo "$redis_json" | json_field "$field")
    row "fan-out $SUBS subs $FANOUT_RATE/s: $field" "$m" "$r" "$(python3 -c "print(f'{$m/$r:.2f}')")" \
        "$([ "$field" = p99_ms ] && echo "<= 1.0" || echo "<= 0.8")"
done
echo "== fan-out knee with $SUBS subscribers: highest changes/s with p99 <= 50 ms" >&2
m=$(knee fanout_memo); r=$(knee fanout_redis)
row "fan-out $SUBS subs: knee (changes/s)" "$m" "$r" "$(python3 -c "print(f'{$m/$r:.2f}' if $r else '-')")" \
    ">= 1.2"

echo "== idle TLS connections: $CONNS" >&2
start_memo memory
memo=$("$BIN/memo-bench" connections --server "$MEMO_ADDR" --certs "$CERTS" --count "$CONNS" --hold 2 --server-pid "$MEMO_PID" --json | json_field kb_per_connection)
stop_pid "$MEMO_PID"
start_redis 0
redis=$("$BIN/memo-bench" redis-connections --server "127.0.0.1:$REDIS_PORT" --certs "$CERTS" --count "$CONNS" --hold 2 --server-pid "$REDIS_PID" --json | json_field kb_per_connection)
stop_pid "$REDIS_PID"
row "idle connection (KiB RSS each)" "$memo" "$redis" "$(python3 -c "print(f'{$memo/$redis:.2f}')")" "<= 16 KiB"

echo "== snapshot of a 100,000-memo store (memo only)" >&2
start_memo memory
snap=$("$BIN/memo-bench" snapshot --server "$MEMO_ADDR" --certs "$CERTS" --memos 100000 --json)
stop_pid "$MEMO_PID"
row "100k snapshot to ready mirror (ms)" "$(echo "$snap" | json_field best_ms)" "-" "-" "<= 300"
row "one change on the wire (bytes)" "$(echo "$snap" | json_field change_bytes)" "-" "-" "< 1024"

echo
# A Markdown table, to paste into BENCHMARKS.md as it is.
echo "| shape | memo | redis | ratio | target |"
echo "|---|---|---|---|---|"
for r in "${ROWS[@]}"; do
    IFS='|' read -r shape memo redis ratio target <<<"$r"
    echo "| $shape | $memo | $redis | $ratio | $target |"
done
echo
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); redis $(redis-server --version | awk '{print $3}'); load average at the start: $LOAD_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
