#!/usr/bin/env bash
# Server instructions per fan-out delivery and per in-memory create (c50 P16), counted by callgrind. The counts are
# deterministic, so a change to the hot paths can be judged without a quiet machine (the table's timings move by
# 10% between runs). Each figure is the difference between two runs of different lengths, so that start-up and the
# TLS handshakes cancel out, divided by the extra deliveries or creates. The server runs with one loop.
#
#   bench/instructions.sh                      both figures (about a minute; needs valgrind)
#   SERVER=/path/to/memo-server bench/instructions.sh   another build's server, measured by this build's memo-bench
#   SERVER_ARGS="--metrics 0" bench/instructions.sh     the server with more options (here: metrics on)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null \
    || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
swift build -c release >&2
BIN=.build/release
SERVER=${SERVER:-$BIN/memo-server}

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

short=$(counted fanout --subscribers 50 --changes 100 --rate 50)
long=$(counted fanout --subscribers 50 --changes 500 --rate 50)
echo "fan-out: $(( (long - short) / (50 * 400) )) server instructions per delivery (50 subscribers, 400 changes)"
short=$(counted --clients 50 --pipeline 16 --requests 50000 --op create --json)
long=$(counted --clients 50 --pipeline 16 --requests 150000 --op create --json)
echo "in-memory create c50 P16: $(( (long - short) / 100000 )) server instructions per create"
