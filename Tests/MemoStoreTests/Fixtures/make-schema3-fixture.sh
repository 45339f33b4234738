#!/usr/bin/env bash
# How schema-3.sqlite (here) was made: memo-server and memo-client built from main at be68560 (SQLite schema
# version 3, the last before version 4) in BIN, a store in a new folder:
#   bash make-schema3-fixture.sh BIN $PWD/data/schema-3.sqlite
# then the log checkpointed into the file (one file, no -wal):
#   python3 -c "import sqlite3; c=sqlite3.connect('data/schema-3.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')"
# Left: a Hangul memo (one version), a memo edited four times (five versions, the last by the same certificate),
# a plain memo, and a deleted memo in the trash (two versions before its delete). `--versions 50 --trash-days 30`.
set -e
BIN=$1
STORE=$2
WORK=$(mktemp -d)
"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null 2>&1
"$BIN/memo-server" serve --listen 127.0.0.1:0 --store "sqlite:$STORE" --certs "$WORK/certs" > "$WORK/srv.log" 2>&1 &
SP=$!
for i in $(seq 100); do grep -q "listening on" "$WORK/srv.log" && break; sleep 0.2; done
PORT=$(grep -o "listening on 127.0.0.1:[0-9]*" "$WORK/srv.log" | head -1 | cut -d: -f2)
C="$BIN/memo-client --server 127.0.0.1:$PORT --certs $WORK/certs"
export MEMO_EXPIRY_WARNING=0
id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
A=$($C add "plain memo, never edited" --json | id)
B=$($C add "한글 메모: 안녕하세요, 세계" --json | id)
E=$($C add "edited memo, version 1" --json | id)
for v in 2 3 4; do $C edit "$E" "edited memo, version $v" >/dev/null; done
$C edit "$E" "edited memo, version 5
with a second line" >/dev/null
D=$($C add "deleted memo, first text" --json | id)
$C edit "$D" "deleted memo, second text" >/dev/null
$C rm "$D" >/dev/null
$C list --json
$C trash --json
kill $SP; wait $SP || true
rm -rf "$WORK"
