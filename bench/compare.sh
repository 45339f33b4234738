#!/usr/bin/env bash
# memo-server against Redis, both over TLS on loopback, the same shapes in one run; prints a table of ratios.
#
#   bench/compare.sh            full run (about 3 minutes on 2 cores)
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

WORK=$(mktemp -d /tmp/memo-compare.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# memo-server with a store; sets MEMO_ADDR and MEMO_PID.
start_memo() {
    local store=$1 out="$WORK/memo-$RANDOM.out"
    "$BIN/memo-server" serve --listen 127.0.0.1:0 --store "$store" --certs "$CERTS" >"$out" 2>"$out.log" &
    MEMO_PID=$!
    PIDS+=("$MEMO_PID")
    for _ in $(seq 1 200); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
    MEMO_ADDR=$(sed -n 's/^listening on //p' "$out")
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# Redis with TLS (mutual, like memo-server); durable=1 turns on appendfsync always. Sets REDIS_PORT, REDIS_PID.
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
    for _ in $(seq 1 200); do
        redis-cli --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
            -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
        sleep 0.05
    done
}
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
row "get c50 P1 (ops/s)" "$memo" "$redis" "$(ratio "$memo" "$redis")" ">= 1.0"
memo=$(median "${PIPE_M[@]}"); redis=$(median "${PIPE_R[@]}")
row "in-memory create c50 P16 (ops/s)" "$memo" "$redis" "$(ratio "$memo" "$redis")" ">= 0.5"

echo "== fan-out to $SUBS subscribers at 100 changes/s" >&2
start_memo memory
memo_json=$("$BIN/memo-bench" fanout --server "$MEMO_ADDR" --certs "$CERTS" --subscribers "$SUBS" --changes "$CHANGES" --rate 100 --server-pid "$MEMO_PID" --json)
stop_pid "$MEMO_PID"
start_redis 0
redis_json=$("$BIN/memo-bench" redis-fanout --server "127.0.0.1:$REDIS_PORT" --certs "$CERTS" --subscribers "$SUBS" --changes "$CHANGES" --rate 100 --server-pid "$REDIS_PID" --json)
stop_pid "$REDIS_PID"
for field in p99_ms server_cpu_us_per_delivery; do
    m=$(echo "$memo_json" | json_field "$field"); r=$(echo "$redis_json" | json_field "$field")
    row "fan-out $SUBS subs: $field" "$m" "$r" "$(python3 -c "print(f'{$m/$r:.2f}')")" "<= 1.0"
done

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
printf '%-40s %14s %14s %8s %10s\n' "shape" "memo" "redis" "ratio" "target"
for r in "${ROWS[@]}"; do
    IFS='|' read -r shape memo redis ratio target <<<"$r"
    printf '%-40s %14s %14s %8s %10s\n' "$shape" "$memo" "$redis" "$ratio" "$target"
done
echo
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); redis $(redis-server --version | awk '{print $3}')"
