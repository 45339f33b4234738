#!/usr/bin/env bash
# How release-1.0.0.sqlite (here) and ../../MemoServerTests/Fixtures/release-1.0.0-postgres.sql were made, with
# memo-server and memo-client built from main at release 1.0.0 (commit 617ce7f) in the current folder:
#   bash make-release-fixtures.sh sqlite:$PWD/data/release-1.0.0.sqlite
#     then: python3 -c "import sqlite3; c=sqlite3.connect('data/release-1.0.0.sqlite');
#           c.execute('PRAGMA wal_checkpoint(TRUNCATE)')"   (one file, no -wal)
#   bash make-release-fixtures.sh postgresql://memo@127.0.0.1:PORT/rel   (a throwaway cluster, empty database)
#     then: pg_dump -h 127.0.0.1 -p PORT -U memo --no-owner --no-privileges rel > release-1.0.0-postgres.sql
# Three memos are left (one Hangul, one edited twice) and one is deleted.
set -e
STORE=$1
./memo-server certs init --dir certs >/dev/null 2>&1 || true
./memo-server serve --listen 127.0.0.1:0 --store "$STORE" --certs certs > srv.log 2>&1 &
SP=$!
for i in $(seq 50); do grep -q "listening on" srv.log && break; sleep 0.2; done
PORT=$(grep -o "listening on 127.0.0.1:[0-9]*" srv.log | head -1 | cut -d: -f2)
C="./memo-client --server 127.0.0.1:$PORT --certs certs"
export MEMO_EXPIRY_WARNING=0
id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
A=$($C add "first memo, kept as it was" --json | id)
B=$($C add "한글 메모: 안녕하세요, 세계" --json | id)
E=$($C add "edited memo, first text" --json | id)
$C edit $E "edited memo, second text" >/dev/null
$C edit $E "edited memo, third text
with a second line" >/dev/null
D=$($C add "deleted memo" --json | id)
$C rm $D >/dev/null
$C list --json
kill $SP; wait $SP || true
