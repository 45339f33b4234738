#!/usr/bin/env bash
# A script's command, whole process: `memo-client add hello` against `redis-cli --tls SET k v`, alternating, and
# `memo-client --version` (issue 30). Prints each run's medians (wall and CPU, milliseconds) and the ratios.
#
#   bench/cli-invocation.sh             3 runs of N=20 invocations of each, against a durable pair of servers
#   N=50 RUNS=5 bench/cli-invocation.sh more invocations, more runs
#   STORE=memory bench/cli-invocation.sh
#                                       memo-server --store memory against Redis without persistence (the client's
#                                       own cost, without the servers' fsync)
#   MEMO_CLIENT=/path/to/memo-client bench/cli-invocation.sh
#                                       another build of the client (a before/after on the same machine)
#
# The durable pair (default): memo-server on a new SQLite file (synchronous=FULL) and redis-server with
# appendfsync always, both on loopback with mutual TLS and the same ECDSA P-256 certificates (`memo-server certs
# init`). Wall time is from just before the process is started to its exit; CPU is the child's user + system time
# (wait4's rusage). Each invocation is timed on its own, memo and Redis taking turns, so that the machine's load
# falls on both alike. Installs redis-server and redis-tools from Debian's packages when missing and builds the
# release binaries; stops every server it started when it ends (also on Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "installing redis-server redis-tools" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi
swift build -c release --product memo-server >&2
swift build -c release --product memo-client >&2
BIN=$(swift build -c release --show-bin-path)
N=${N:-20}
RUNS=${RUNS:-3}
STORE=${STORE:-sqlite}

source bench/common.sh
bench_workdir memo-cli-invocation
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"
export MEMO_EXPIRY_WARNING=0

if [ "$STORE" = memory ]; then
    start_memo memory
    redis_persistence=(--save "" --appendonly no)
else
    start_memo "sqlite:$WORK/memo/memos.sqlite"
    redis_persistence=(--save "" --appendonly yes --appendfsync always)
fi
[ -n "$MEMO_ADDR" ] || { echo "memo-server did not start: $(cat "$MEMO_LOG.err")" >&2; exit 1; }
REDIS_PORT=$(free_port)
mkdir -p "$WORK/redis"
redis-server --port 0 --tls-port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" \
    --tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" \
    --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients yes \
    "${redis_persistence[@]}" --daemonize no --logfile "$WORK/redis/redis.log" &
PIDS+=("$!")
REDIS=(redis-cli --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key"
    -h 127.0.0.1 -p "$REDIS_PORT")
for _ in $(seq 1 200); do "${REDIS[@]}" ping >/dev/null 2>&1 && break; sleep 0.05; done
MEMO=("${MEMO_CLIENT:-$BIN/memo-client}" --server "$MEMO_ADDR" --certs "$CERTS")

echo "memo-server $STORE at $MEMO_ADDR, redis-server --tls on $REDIS_PORT ($([ "$STORE" = memory ] && echo \
    'no persistence' || echo 'appendfsync always')); N=$N, $RUNS runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
# The timing: one child at a time (posix_spawn), wall from the spawn to wait4's return, CPU from wait4's rusage. Every command
# must succeed (memo-client exits 0, redis-cli prints OK), or the figures would be those of a failure.
python3 - "$N" "$RUNS" "${#MEMO[@]}" "${MEMO[@]}" "${REDIS[@]}" <<'EOF'
import os, statistics, sys, tempfile, time

n, runs, memo_len = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
memo = sys.argv[4:4 + memo_len]
redis = sys.argv[4 + memo_len:]

def run(argv, expect):
    """Runs argv once: (wall ms, CPU ms), CPU being the child's own user + system time from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        out.seek(0); err.seek(0)
        output = out.read()
        if os.waitstatus_to_exitcode(status) != 0 or not expect(output):
            sys.exit(f"failed: {' '.join(argv)}: status {status}: {output!r} {err.read()!r}")
    return wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000

added = lambda out: out.count(b"\t") >= 3
ok = lambda out: out.strip() == b"OK"
version = lambda out: out.startswith(b"memo-client ")
rows = []
for r in range(1, runs + 1):
    m_wall, m_cpu, r_wall, r_cpu, v_wall, v_cpu = [], [], [], [], [], []
    for i in range(n):
        w, c = run(memo + ["add", "hello"], added); m_wall.append(w); m_cpu.append(c)
        w, c = run(redis + ["SET", "k", "v"], ok); r_wall.append(w); r_cpu.append(c)
        w, c = run([memo[0], "--version"], version); v_wall.append(w); v_cpu.append(c)
    med = statistics.median
    row = (med(m_wall), med(m_cpu), med(r_wall), med(r_cpu), med(v_wall), med(v_cpu))
    rows.append(row)
    print(f"run {r}: memo-client add {row[0]:.1f} ms wall {row[1]:.1f} ms CPU | redis-cli SET {row[2]:.1f} ms wall "
          f"{row[3]:.1f} ms CPU | ratio wall {row[0] / row[2]:.2f} CPU {row[1] / row[3]:.2f} | "
          f"memo-client --version {row[4]:.1f} ms wall {row[5]:.1f} ms CPU", flush=True)
if runs > 1:
    med = statistics.median
    ratios_wall = [row[0] / row[2] for row in rows]
    ratios_cpu = [row[1] / row[3] for row in rows]
    print(f"median of {runs} runs: add/SET wall {med(ratios_wall):.2f}x, CPU {med(ratios_cpu):.2f}x; "
          f"--version {med(row[4] for row in rows):.1f} ms wall, {med(row[5] for row in rows):.1f} ms CPU")
EOF
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
