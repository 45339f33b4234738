#!/usr/bin/env bash
# The fan-out's server CPU per delivery with a change's records batched into one io_uring submission per loop
# (`--sends batched`, the default) against one send(2) each (`--sends each`), and Redis's, alternating on fresh
# servers: compare.sh's fan-out shape (1,000 subscribers, 200 changes at 20/s, memory store), RUNS times.
#
#   bench/fanout-sends.sh             RUNS=5 SUBS=1000 RATE=20 CHANGES=200 (env overrides)
#   BIN=folder bench/fanout-sends.sh  another build's binaries (nothing built)
#
# Prints one line per server and run (CPU per delivery in µs, p99 in ms, missing deliveries), then the medians and
# the ratios to Redis of the same runs. Installs redis-server when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
if ! command -v redis-server >/dev/null; then
    echo "installing redis-server redis-tools" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi
if [ -z "${BIN:-}" ]; then swift build -c release >&2; BIN=.build/release; fi
RUNS=${RUNS:-5}; SUBS=${SUBS:-1000}; RATE=${RATE:-20}; CHANGES=${CHANGES:-200}
source bench/common.sh
bench_workdir memo-fanout-sends
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"

fields() { python3 -c "
import json,sys
j=json.loads(sys.stdin.read().strip().splitlines()[-1])
print(j['server_cpu_us_per_delivery'], j['p99_ms'], j['missing'])"; }
declare -A CPU
for run in $(seq 1 "$RUNS"); do
    for way in batched each redis; do
        if [ "$way" = redis ]; then
            start_redis 0
            line=$("$BIN/memo-bench" redis-fanout --server "127.0.0.1:$REDIS_PORT" --certs "$CERTS" \
                --subscribers "$SUBS" --changes "$CHANGES" --rate "$RATE" --server-pid "$REDIS_PID" --json | fields)
            stop_pid "$REDIS_PID"
        else
            MEMO_SERVE_ARGS="--sends $way" start_memo memory
            grep -q "sends: $way" "$MEMO_LOG.err" || { echo "the server does not say sends: $way" >&2; cat "$MEMO_LOG.err" >&2; exit 1; }
            line=$("$BIN/memo-bench" fanout --server "$MEMO_ADDR" --certs "$CERTS" --subscribers "$SUBS" \
                --changes "$CHANGES" --rate "$RATE" --server-pid "$MEMO_PID" --json | fields)
            stop_pid "$MEMO_PID"
        fi
        read -r cpu p99 missing <<<"$line"
        echo "run $run $way: cpu/delivery $cpu us, p99 $p99 ms, missing $missing"
        CPU[$way]="${CPU[$way]:-} $cpu"
    done
done
python3 - "${CPU[batched]}" "${CPU[each]}" "${CPU[redis]}" <<'PY'
import statistics, sys
b, e, r = ([float(x) for x in a.split()] for a in sys.argv[1:])
print(f"median cpu/delivery: batched {statistics.median(b):.2f} us, each {statistics.median(e):.2f} us, redis {statistics.median(r):.2f} us")
print("ratio to redis per run: batched " + " ".join(f"{x/y:.2f}" for x, y in zip(b, r))
      + "; each " + " ".join(f"{x/y:.2f}" for x, y in zip(e, r)))
print(f"median ratio: batched {statistics.median([x/y for x, y in zip(b, r)]):.2f}, each {statistics.median([x/y for x, y in zip(e, r)]):.2f}")
PY
