#!/usr/bin/env bash
# Where a request's time goes in compare.sh's in-memory create c50 P16 shape, memo-server with memo-bench against
# redis-server with redis-benchmark (SET -d 64 -r 1000), alternating on fresh servers: for each side's server and
# client, CPU per request split into user and kernel time, system calls, context switches and migrations per
# request, and the rate. Both programs of a side share the machine's cores, so the rate follows their sum.
# Each side's client runs twice on one server per round: timed, then counted (see measure).
#
#   bench/p16-anatomy.sh                 3 rounds of 400,000 requests each side
#   ROUNDS=5 N=200000 bench/p16-anatomy.sh
#
# Counts come from `perf stat` software events (task-clock, context-switches, cpu-migrations and the
# raw_syscalls:sys_enter tracepoint), which work where hardware counters do not; user and kernel time from
# /proc/PID/stat for the server and getrusage for the client.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
ROUNDS=${ROUNDS:-3}; N=${N:-400000}
command -v perf >/dev/null || { echo "perf is needed (Debian's linux-perf)" >&2; exit 1; }
command -v redis-benchmark >/dev/null || { echo "redis-server and redis-tools are needed" >&2; exit 1; }
perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 \
    || { echo "perf cannot count system calls here (raw_syscalls:sys_enter)" >&2; exit 1; }
[ -x .build/release/memo-bench ] || swift build -c release >&2
BIN=.build/release
source bench/common.sh
bench_workdir memo-anatomy
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"
EVENTS=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter

cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }  # user and kernel clock ticks of a live process

# side-name server-pid client-command... -> one line of figures per request. The client runs twice against the same
# server: first timed alone, then counted under perf (whose system-call tracepoint costs time of its own, more in
# a threaded process, so the time is not taken from that run).
measure() {
    local side=$1 pid=$2; shift 2
    local before after perf_pid
    before=$(cpu_ticks "$pid")
    client_run "$WORK/timed" "$@"
    after=$(cpu_ticks "$pid")
    perf stat -e "$EVENTS" -x, -o "$WORK/server.perf" -p "$pid" &
    perf_pid=$!
    sleep 0.3
    client_run "$WORK/counted" perf stat -e "$EVENTS" -x, -o "$WORK/client.perf" -- "$@"
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
    python3 - "$side" "$N" "$before" "$after" "$(getconf CLK_TCK)" "$WORK" <<'PY'
import json, re, sys
side, n, before, after, hz, work = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), \
    int(sys.argv[5]), sys.argv[6]
def events(path):
    found = {}
    for line in open(path):
        fields = line.strip().split(",")
        if len(fields) > 2 and fields[0] and fields[0][0].isdigit():
            found[fields[2]] = float(fields[0])
    return found
def rate(prefix):
    text = open(prefix + ".out", encoding="utf-8", errors="replace").read()
    if side == "memo":
        return json.loads(text.strip().splitlines()[-1])["ops_per_sec"]
    return float(re.search(r'"SET","([0-9.]+)"', text).group(1))
server, client = events(work + "/server.perf"), events(work + "/client.perf")
user_s = (int(after[0]) - int(before[0])) / hz
sys_s = (int(after[1]) - int(before[1])) / hz
c_user, c_sys = map(float, open(work + "/timed.rusage").read().split())
us = 1e6 / n
print(f"{side:5} {rate(work + '/timed'):9.0f} {rate(work + '/counted'):9.0f} | {user_s*us:5.2f} {sys_s*us:5.2f} "
      f"{server['raw_syscalls:sys_enter']/n:6.3f} {server['context-switches']/n:6.3f} "
      f"{server['cpu-migrations']/n:6.3f} | {c_user*us:5.2f} {c_sys*us:5.2f} "
      f"{client['raw_syscalls:sys_enter']/n:6.3f} {client['context-switches']/n:6.3f} "
      f"{client['cpu-migrations']/n:6.3f}")
PY
}

# prefix command... -> runs it; its stdout in PREFIX.out, the user and kernel seconds it used in PREFIX.rusage
client_run() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
run = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, check=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1] + ".out", "wb") as f: f.write(run.stdout)
with open(sys.argv[1] + ".rusage", "w") as f: f.write(f"{usage.ru_utime} {usage.ru_stime}\n")
PY
}

echo "per request: user and kernel CPU in µs, system calls, context switches and CPU migrations (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "ops/s: timed run, counted run; user and kernel time from the timed run, counts from the counted run"
printf '%-5s %9s %9s | %-37s | %s\n' side timed counted "server: user sys syscalls switch migr" \
    "client: user sys syscalls switch migr"
for round in $(seq 1 "$ROUNDS"); do
    start_memo memory
    measure memo "$MEMO_PID" "$BIN/memo-bench" --server "$MEMO_ADDR" --certs "$CERTS" --clients 50 --pipeline 16 \
        --requests "$N" --op create --json
    stop_pid "$MEMO_PID"
    start_redis 0
    measure redis "$REDIS_PID" redis-benchmark --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" \
        --key "$CERTS/client.key" -h 127.0.0.1 -p "$REDIS_PORT" -t set -c 50 -P 16 -n "$N" -d 64 -r 1000 --csv -q
    stop_pid "$REDIS_PID"
done
