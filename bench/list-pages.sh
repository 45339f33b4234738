#!/usr/bin/env bash
# list --limit 10 (one list-page request, protocol version 2) against fetching the whole list, as list --limit did
# before it, on a memo-server of N memos over SQLite: wall time of the memo-client process, median of 15 runs.
#
#   bench/list-pages.sh            N=100000 memos
#   N=20000 bench/list-pages.sh    fewer
#
# The memos are imported from a generated export (dates spread over a year). "list | head -10" is what
# `list --limit 10` cost before: the whole list read from the server, then cut.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
N=${N:-100000}
swift build -c release --product memo-server >&2
swift build -c release --product memo-client >&2
BIN=$PWD/.build/release
source bench/common.sh
bench_workdir memo-list-pages
CERTS="$WORK/certs"
"$BIN/memo-server" certs init --dir "$CERTS" >/dev/null
start_memo "sqlite:$WORK/memos.sqlite"
export MEMO_SERVER=$MEMO_ADDR MEMO_CERTS=$CERTS MEMO_EXPIRY_WARNING=0
python3 - "$WORK/memos.jsonl" "$N" <<'PY'
import sys, uuid
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        d = "2026-%02d-%02dT%02d:%02d:%02d.%06dZ" % (1 + i // 10000 % 12, 1 + i // 400 % 28, i // 60 % 24, i % 60,
                                                   i % 60, i % 1000000)
        f.write('{"id":"%s","content":"memo %d with some words to look like a note","insertDate":"%s",'
                '"updateDate":"%s"}\n' % (uuid.uuid4(), i, d, d))
PY
"$BIN/memo-client" import "$WORK/memos.jsonl" --quiet
run() {  # NAME COMMAND...: median, min and max of 15 runs
    local name=$1 times=() start
    shift
    for _ in $(seq 15); do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        times+=($(( ($(date +%s%N) - start) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v n="$name" '{a[NR] = $1} END {
        printf "| %s | %.1f | %.1f | %.1f |\n", n, a[8] / 1000, a[1] / 1000, a[15] / 1000 }'
}
cursor=$("$BIN/memo-client" list --limit 10 2>&1 >/dev/null | cut -f2)
echo "| $N memos, SQLite | median ms | min ms | max ms |"
echo "|---|---|---|---|"
run '`list --limit 10` (one page)' "$BIN/memo-client" list --limit 10
run '`list --limit 10 --after CURSOR` (the second page)' "$BIN/memo-client" list --limit 10 --after "$cursor"
run '`list | head -10` (the whole list read, then cut)' sh -c "'$BIN/memo-client' list | head -10"
run '`list -o ids` (the whole list read and printed)' "$BIN/memo-client" list -o ids
run '`list --json` (the whole list as JSON)' "$BIN/memo-client" list --json
echo
echo "stdout bytes: list --json $("$BIN/memo-client" list --json | wc -c), list --limit 10 --json" \
    "$("$BIN/memo-client" list --limit 10 --json | wc -c)"
