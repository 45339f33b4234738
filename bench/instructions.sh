#!/usr/bin/env bash
# Server instructions per fan-out delivery and per in-memory create (c50 P16), counted by callgrind, and the
# client's side: memo-client's CPU time per imported memo (64 creates in flight through its connection machine,
# request table and WireConnection; timed, not counted: see client_cpu below). The counts are deterministic, so a
# change to the hot paths can be judged without a quiet machine (the table's timings move by 10% between runs).
# Each figure is the difference between two runs of different lengths, so that start-up and the TLS handshakes
# cancel out, divided by the extra deliveries, creates or imported memos. The server runs with one loop.
#
#   bench/instructions.sh                      every figure (a few minutes; needs valgrind)
#   FIGURES=server bench/instructions.sh       only the server's two (FIGURES=client: only memo-client's)
#   FIGURES=get bench/instructions.sh          the get (c50 P1, 1,000 memos): the server's instructions and syscalls
#                                              per get, and memo-bench's instructions per get (the client side)
#   FIGURES=bench bench/instructions.sh        memo-bench's own instructions per c50 P16 create and per c50 P1 get (the
#                                              benchmark's client, which shares the cores with the server it measures)
#   FIGURES=redis bench/instructions.sh        only Redis's per SET (also part of "all" when redis-server is installed)
#   SERVER=/path/to/memo-server bench/instructions.sh   another build's server, measured by this build's memo-bench
#   CLIENT=/path/to/memo-client bench/instructions.sh   another build's memo-client, against this build's server
#   SERVER_ARGS="--metrics 0" bench/instructions.sh     the server with more options (here: metrics on)
#   BIN=/path/to/release bench/instructions.sh          every binary from that folder, nothing built
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null \
    || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# BIN: where memo-server, memo-bench and memo-client are taken from (this build's release folder, built first,
# unless BIN is given: then nothing is built)
if [ -z "${BIN:-}" ]; then
    swift build -c release >&2
    BIN=.build/release
fi
SERVER=${SERVER:-$BIN/memo-server}
CLIENT=${CLIENT:-$BIN/memo-client}
FIGURES=${FIGURES:-all}

source bench/common.sh
bench_workdir memo-instructions
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"

# The instructions a one-loop memo-server executes, start to stop, while memo-bench runs with the arguments given
# (the mode first, when there is one; --server and --certs are added).
counted() {
    local out="$WORK/callgrind.$RANDOM"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$SERVER" serve --listen 127.0.0.1:0 --store memory \
        --threads 1 --certs "$CERTS" ${SERVER_ARGS:-} >"$out.log" 2>/dev/null &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 300); do grep -q "listening on" "$out.log" 2>/dev/null && break; sleep 0.1; done
    local address
    address=$(sed -n 's/^listening on //p' "$out.log")
    if [ "$1" = fanout ]; then
        "$BIN/memo-bench" fanout --server "$address" --certs "$CERTS" "${@:2}" >/dev/null
    else
        "$BIN/memo-bench" --server "$address" --certs "$CERTS" "$@" >/dev/null
    fi
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

if [ "$FIGURES" = all ] || [ "$FIGURES" = server ]; then
    short=$(counted fanout --subscribers 50 --changes 100 --rate 50)
    long=$(counted fanout --subscribers 50 --changes 500 --rate 50)
    echo "fan-out: $(( (long - short) / (50 * 400) )) server instructions per delivery (50 subscribers, 400 changes)"
    short=$(counted --clients 50 --pipeline 16 --requests 50000 --op create --json)
    long=$(counted --clients 50 --pipeline 16 --requests 150000 --op create --json)
    echo "in-memory create c50 P16: $(( (long - short) / 100000 )) server instructions per create"
fi

# The get, compare.sh's get shape (50 clients, one request in flight each, 1,000 memos of 64 bytes, seeded by
# memo-bench in every run, so the seeding cancels): the server's instructions per get by `counted`; memo-bench's own
# per get, the server running natively and memo-bench under callgrind; and the server's system calls per get,
# counted by `perf stat -e raw_syscalls:sys_enter` over the server's whole life (each the difference of two runs).
GET_SHORT=${GET_SHORT:-10000}
GET_LONG=${GET_LONG:-30000}
get_args() { echo --clients 50 --pipeline 1 --size 64 --op get --requests "$1" --json; }

# memo-bench's own instructions, start to stop, under callgrind against a native in-memory server, with the
# arguments given (--server and --certs added). CALLGRIND_KEEP=folder keeps each profile there.
bench_counted() {
    local out="$WORK/callgrind-client.$RANDOM"
    start_memo memory
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN/memo-bench" --server "$MEMO_ADDR" \
        --certs "$CERTS" "$@" >/dev/null 2>&1
    stop_pid "$MEMO_PID"
    if [ -n "${CALLGRIND_KEEP:-}" ]; then cp "$out" "$CALLGRIND_KEEP/"; fi
    callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

syscalls_counted() {
    local out="$WORK/perf.$RANDOM"
    perf stat -x, -e raw_syscalls:sys_enter -o "$out" "$SERVER" serve --listen 127.0.0.1:0 --store memory \
        --threads 1 --certs "$CERTS" ${SERVER_ARGS:-} >"$out.log" 2>/dev/null &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 300); do grep -q "listening on" "$out.log" 2>/dev/null && break; sleep 0.1; done
    local address server
    address=$(sed -n 's/^listening on //p' "$out.log")
    server=$(pgrep -P "$pid")
    # shellcheck disable=SC2046
    "$BIN/memo-bench" --server "$address" --certs "$CERTS" $(get_args "$1") >/dev/null
    kill -INT "$server"
    wait "$pid" 2>/dev/null || true
    sed -n 's/^\([0-9]*\),.*raw_syscalls:sys_enter.*/\1/p' "$out"
}

if [ "$FIGURES" = all ] || [ "$FIGURES" = get ]; then
    extra=$((GET_LONG - GET_SHORT))
    # shellcheck disable=SC2046
    short=$(counted $(get_args "$GET_SHORT"))
    # shellcheck disable=SC2046
    long=$(counted $(get_args "$GET_LONG"))
    echo "get c50 P1: $(( (long - short) / extra )) server instructions per get"
    short=$(syscalls_counted "$GET_SHORT")
    long=$(syscalls_counted "$GET_LONG")
    echo "get c50 P1: $(awk "BEGIN { printf \"%.2f\", ($long - $short) / $extra }") server system calls per get"
    # shellcheck disable=SC2046
    short=$(bench_counted $(get_args "$GET_SHORT"))
    # shellcheck disable=SC2046
    long=$(bench_counted $(get_args "$GET_LONG"))
    echo "get c50 P1: $(( (long - short) / extra )) memo-bench instructions per get (the client)"
fi

# memo-bench's side alone (FIGURES=bench): per c50 P16 create (runs of 20,000 and 60,000 creates) and per c50 P1 get
# (GET_SHORT and GET_LONG gets of 1,000 seeded memos); start-up, handshakes and seeding cancel.
if [ "$FIGURES" = bench ]; then
    short=$(bench_counted --clients 50 --pipeline 16 --requests 20000 --op create --json)
    long=$(bench_counted --clients 50 --pipeline 16 --requests 60000 --op create --json)
    echo "create c50 P16: $(( (long - short) / 40000 )) memo-bench instructions per create (the client)"
    # shellcheck disable=SC2046
    short=$(bench_counted $(get_args "$GET_SHORT"))
    # shellcheck disable=SC2046
    long=$(bench_counted $(get_args "$GET_LONG"))
    echo "get c50 P1: $(( (long - short) / (GET_LONG - GET_SHORT) )) memo-bench instructions per get (the client)"
fi

# The instructions a redis-server (TLS both ways, no persistence) executes, start to stop, while redis-benchmark sends
# $1 SETs from 50 clients 16 deep (64-byte values, 1,000 keys: compare.sh's shape): the comparison for the create.
# With $2 = get and $3 = 1: $1 GETs one deep, after 20,000 SETs of the 1,000 keys (the comparison for the get).
redis_counted() {
    local out="$WORK/callgrind-redis.$RANDOM" port
    port=$(free_port)
    mkdir -p "$out.dir"
    valgrind --tool=callgrind --callgrind-out-file="$out" redis-server --port 0 --tls-port "$port" \
        --bind 127.0.0.1 --dir "$out.dir" --tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" \
        --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients yes --save "" --appendonly no --daemonize no \
        --logfile "$out.dir/redis.log" >/dev/null 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    wait_for_redis "$port" 300 0.1
    if [ "${2:-set}" = get ]; then
        redis-benchmark --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
            -h 127.0.0.1 -p "$port" -t set -c 50 -P 16 -n 20000 -d 64 -r 1000 -q >/dev/null 2>&1
    fi
    redis-benchmark --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
        -h 127.0.0.1 -p "$port" -t "${2:-set}" -c 50 -P "${3:-16}" -n "$1" -d 64 -r 1000 -q >/dev/null 2>&1
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

if [ "$FIGURES" = redis ] || { [ "$FIGURES" = all ] && command -v redis-server >/dev/null; }; then
    short=$(redis_counted 50000)
    long=$(redis_counted 150000)
    echo "Redis SET c50 P16: $(( (long - short) / 100000 )) server instructions per SET"
fi
if [ "$FIGURES" = redis ] || [ "$FIGURES" = get ] || { [ "$FIGURES" = all ] && command -v redis-server >/dev/null; }
then
    # compare.sh's get row: GETs of 1,000 keys set beforehand (20,000 SETs in both runs, so they cancel)
    short=$(redis_counted "$GET_SHORT" get 1)
    long=$(redis_counted "$GET_LONG" get 1)
    echo "Redis GET c50 P1: $(( (long - short) / (GET_LONG - GET_SHORT) )) server instructions per GET"
fi

# memo-client's CPU time (user and system), start to stop, importing $1 new memos (ids from $2 on, the same in
# every run) into an in-memory server. CPU time, not instructions: valgrind (3.19) stops with an internal error on
# Swift programs with an async main, whose main thread parks in libdispatch's sigsuspend (memo-client, memo-bench),
# so the client's side is timed; each figure is the median of five runs.
client_cpu() {
    python3 - "$CLIENT" "$MEMO_ADDR" "$CERTS" "$WORK" "$1" "$2" <<'PY'
import os, resource, subprocess, sys, uuid
client, address, certs, work, count, base = sys.argv[1:4] + [sys.argv[4], int(sys.argv[5]), int(sys.argv[6])]
line = '{"id":"%s","content":"imported memo %d","insertDate":"2026-01-01T00:00:00Z",' \
    '"updateDate":"2026-01-01T00:00:00Z","revision":1}\n'
env = dict(os.environ, MEMO_EXPIRY_WARNING="0")
times = []
for run in range(5):
    path = os.path.join(work, "import-%d-%d.jsonl" % (count, run))
    start = base + run * count
    with open(path, "w") as f:
        for i in range(start, start + count):
            f.write(line % (uuid.UUID(int=i * 0x9E3779B97F4A7C15F39CC0605CEDC835 % 2**128), i))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([client, "--server", address, "--certs", certs, "import", "--quiet", path], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
print(int(sorted(times)[2] * 1e6))
PY
}

if [ "$FIGURES" = all ] || [ "$FIGURES" = client ]; then
    start_memo memory
    short=$(client_cpu 2000 0)
    long=$(client_cpu 20000 10000000)
    stop_pid "$MEMO_PID"
    echo "memo-client import: $(awk "BEGIN { printf \"%.2f\", ($long - $short) / 18000 }") µs of client CPU per" \
        "imported memo (18,000 memos)"
fi
