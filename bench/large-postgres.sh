#!/usr/bin/env bash
# A million memos on PostgreSQL: memo-server's start (exec to its "listening on" line, the whole store read into
# memory) and its RSS, the figures `memo-bench large` gives for SQLite.
#
#   bench/large-postgres.sh                  1,000,000 memos of 100 bytes, three runs
#   MEMOS=100000 RUNS=5 bench/large-postgres.sh
#   SERVER=/path/to/memo-server bench/large-postgres.sh   another build's server (a before/after comparison)
#   AUTHORS=10 bench/large-postgres.sh       the memos by 10 authors in turn, not by the empty author
#
# It starts a throwaway PostgreSQL (initdb into a temporary folder, as the postgres user when run as root) on a
# free loopback port, lets memo-server create its schema on the empty database, then fills the tables with SQL
# the way the store itself would have left them after MEMOS creates of SIZE bytes each: one `memos` row per memo
# (revision i, dated BASE + i), the last 100,000 creates in `memo_changes` (older ones pruned: `memo_floor` below
# them), `memo_head` at revision MEMOS. With AUTHORS=N, memo i is by author i mod N: name `author-K`, serial 32
# upper-case hex characters (an MD5), as certificates give them. Then `memo-bench large --postgres URI` starts the server RUNS times.
# Everything is stopped and removed when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

MEMOS=${MEMOS:-1000000}
SIZE=${SIZE:-100}
RUNS=${RUNS:-3}
AUTHORS=${AUTHORS:-0}
HISTORY=100000
source bench/common.sh
find_postgres
swift build -c release --product memo-bench >&2
swift build -c release --product memo-server >&2
swift build -c release --product memo-client >&2
BIN=.build/release

bench_workdir memo-large-pg
start_postgres
"${PSQL[@]}" -d postgres -c "CREATE DATABASE large"
URI="postgresql://memo@127.0.0.1:$PGPORT/large"
mkdir -p "$WORK/bench"
"$BIN/memo-server" certs init --dir "$WORK/bench/certs" >/dev/null

# The schema, as memo-server makes it on first start.
CERTS="$WORK/bench/certs"
start_memo "$URI"
[ -n "$MEMO_ADDR" ] || { cat "$MEMO_LOG.err" >&2; exit 1; }
stop_pid "$MEMO_PID"

FILL_START=$(date +%s.%N)
"${PSQL[@]}" -d large <<EOF
BEGIN;
INSERT INTO memos (id, content, insert_micros, update_micros, revision, author_name, author_serial)
    SELECT gen_random_uuid(), convert_to(repeat('m', $SIZE), 'UTF8'), 1700000000000000 + i, 1700000000000000 + i, i,
        CASE WHEN $AUTHORS > 0 THEN 'author-' || i % greatest($AUTHORS, 1) ELSE '' END,
        CASE WHEN $AUTHORS > 0 THEN upper(md5('serial ' || i % greatest($AUTHORS, 1))) ELSE '' END
    FROM generate_series(1, $MEMOS) AS i;
INSERT INTO memo_changes (revision, kind, id, content, insert_micros, update_micros, author_name, author_serial)
    SELECT revision, 1, id, content, insert_micros, update_micros, author_name, author_serial FROM memos
    WHERE revision > $MEMOS - $HISTORY;
UPDATE memo_head SET revision = $MEMOS, last_insert = 1700000000000000 + $MEMOS WHERE one;
UPDATE memo_floor SET revision = greatest($MEMOS - $HISTORY, 0) WHERE one;
COMMIT;
VACUUM ANALYZE;
EOF
FILL_END=$(date +%s.%N)
python3 -c "print(f'filled {$MEMOS} memos ({$AUTHORS} authors) with SQL in {$FILL_END - $FILL_START:.1f} s')"
"${PSQL[@]}" -d large -c "SELECT 'database ' || pg_size_pretty(pg_database_size('large'))"

uptime
SERVER=${SERVER:-}
if [ -n "$SERVER" ]; then
    # memo-bench starts the memo-server next to itself (symbolic links resolved): copies in a folder of their own.
    mkdir -p "$WORK/other"
    cp "$BIN/memo-bench" "$BIN/memo-client" "$WORK/other/"
    cp "$SERVER" "$WORK/other/memo-server"
    BENCH="$WORK/other/memo-bench"
else
    BENCH="$BIN/memo-bench"
fi
"$BENCH" large --memos "$MEMOS" --size "$SIZE" --runs "$RUNS" --dir "$WORK/bench" --postgres "$URI"
uptime
