#!/usr/bin/env bash
# What one io_uring submission of a change's sends would save the fan-out against a send(2) per subscriber
# (bench/send-batching.c): the sender's CPU per loopback send of a 150-byte record to each of 1,000 sockets, the
# three ways alternating, RUNS times; prints each way's runs and median in µs. Installs Debian's liburing-dev when
# missing. No memo-server runs: this bounds what a batched-send design could buy before one is built.
#
#   bench/send-batching.sh                 8 runs of 300 rounds to 1,000 sockets
#   RUNS=12 SOCKETS=1000 ROUNDS=300 bench/send-batching.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-8}; SOCKETS=${SOCKETS:-1000}; ROUNDS=${ROUNDS:-300}
if [ ! -e /usr/include/liburing.h ]; then
    echo "installing liburing-dev" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liburing-dev >/dev/null
fi
WORK=$(mktemp -d /tmp/memo-send.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -Wall -o "$WORK/send-batching" bench/send-batching.c -luring
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
for _ in $(seq "$RUNS"); do
    for mode in 0 1 2; do "$WORK/send-batching" "$SOCKETS" "$ROUNDS" "$mode"; done
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    name, micros = line.split()
    runs.setdefault(name, []).append(float(micros))
for name, values in runs.items():
    each = " ".join("%.2f" % v for v in values)
    print("%-20s median %.2f us CPU per send; runs %s" % (name, statistics.median(values), each))
'
uptime
