#!/usr/bin/env python3
# SQLite alone, the statements memo-server's SQLite writer runs for an update (schema version 3), with versions kept
# (K = 50: the row marked as a version, so also in the partial index changes_versions, and the cap's query) and
# without (K = 0): updates/s and pages written to the WAL per commit of BATCH updates, synchronous=FULL, the two
# alternating, medians. It shows the cost the server's benchmark (bench/versions.sh) cannot separate from the
# machine's noise: one random leaf of the index by id written per change. See BENCHMARKS.md, "Versions kept".
# Usage: bench/versions-wal-pages.py [MEMOS [BATCHES [BATCH [RUNS]]]]  (20000 100 50 4)
import os, random, sqlite3, statistics, sys, tempfile, time, uuid

MEMOS, BATCHES, BATCH, RUNS = (list(map(int, sys.argv[1:])) + [20000, 100, 50, 4][len(sys.argv) - 1:])[:4]
SCHEMA = """
CREATE TABLE changes (revision INTEGER PRIMARY KEY, current INTEGER NOT NULL, kind INTEGER NOT NULL, id BLOB NOT NULL,
    insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, content TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '', serial TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL DEFAULT 0);
CREATE INDEX changes_versions ON changes (id, revision) WHERE version > 0;
CREATE INDEX changes_trash ON changes (revision) WHERE version = 4;
"""
NTH = "SELECT revision FROM changes WHERE id = ? AND version > 0 ORDER BY revision DESC LIMIT 1 OFFSET ?"
INSERT = "INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def run(keep, folder):
    path = os.path.join(folder, f"k{keep}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(SCHEMA)
    ids = [uuid.uuid4().bytes for _ in range(MEMOS)]
    current = {}
    revision = 0
    db.execute("BEGIN")
    for memo in ids:
        revision += 1
        current[memo] = revision
        db.execute(INSERT, (revision, 1, 1, memo, 1, 1, "x" * 64, "alice", "01", 1 if keep else 0))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA wal_autocheckpoint=0")
    pick = random.Random(1)
    start = time.perf_counter()
    for _ in range(BATCHES):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(BATCH):
            memo = ids[pick.randrange(MEMOS)]
            db.execute("UPDATE changes SET current = 0 WHERE revision = ? AND current = 1", (current[memo],))
            revision += 1
            current[memo] = revision
            db.execute(INSERT, (revision, 1, 2, memo, 1, 2, "x" * 64, "alice", "01", 2 if keep else 0))
            if keep:
                db.execute(NTH, (memo, keep)).fetchone()
        db.execute("COMMIT")
    seconds = time.perf_counter() - start
    page = db.execute("PRAGMA page_size").fetchone()[0]
    pages = os.path.getsize(path + "-wal") / BATCHES / (page + 24)
    db.close()
    return BATCHES * BATCH / seconds, pages


with tempfile.TemporaryDirectory(dir="/tmp") as folder:
    results = {50: [], 0: []}
    for run_index in range(RUNS):
        for keep in (50, 0) if run_index % 2 == 0 else (0, 50):
            ops, pages = run(keep, folder)
            results[keep].append((ops, pages))
            print(f"   run {run_index + 1} K={keep}: {ops:,.0f} updates/s, {pages:.1f} WAL pages per commit",
                  file=sys.stderr)
    on = statistics.median(r[0] for r in results[50])
    off = statistics.median(r[0] for r in results[0])
    print(f"SQLite alone, {MEMOS} memos, commits of {BATCH} updates: K=50 {on:,.0f}/s "
          f"({statistics.median(r[1] for r in results[50]):.1f} WAL pages per commit), K=0 {off:,.0f}/s "
          f"({statistics.median(r[1] for r in results[0]):.1f}), ratio {on / off:.2f}")
