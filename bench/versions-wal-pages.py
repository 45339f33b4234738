#!/usr/bin/env python3
# SQLite alone, the statements memo-server's SQLite writer runs for an update, with versions kept (K = 50) and
# without (K = 0): updates/s and pages written to the WAL per commit of BATCH updates, synchronous=FULL, the modes
# alternating, medians. Three modes: schema version 3 with K = 50 (the row marked as a version, so also in the
# partial index changes_versions keyed by the memo's random id, and the cap's query on it), schema version 4 with
# K = 50 (the row linked to the memo's previous version, its number and oldest kept version taken from the row the
# update retires anyway, RETURNING; the version pushed out found by one rowid read, and dropped later in bulk) and
# K = 0 (schema 4's statements with versions off). See BENCHMARKS.md, "Versions kept".
# Usage: bench/versions-wal-pages.py [MEMOS [BATCHES [BATCH [RUNS [UPDATES_BEFORE]]]]]  (20000 100 50 4 0)
# UPDATES_BEFORE: updates per memo made before the measure (K = 50 then has that many versions per memo already).
import os, random, sqlite3, statistics, sys, tempfile, time, uuid

MEMOS, BATCHES, BATCH, RUNS, BEFORE = (list(map(int, sys.argv[1:])) + [20000, 100, 50, 4, 0][len(sys.argv) - 1:])[:5]
SCHEMA3 = """
CREATE TABLE changes (revision INTEGER PRIMARY KEY, current INTEGER NOT NULL, kind INTEGER NOT NULL, id BLOB NOT NULL,
    insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, content TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '', serial TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL DEFAULT 0);
CREATE INDEX changes_versions ON changes (id, revision) WHERE version > 0;
CREATE INDEX changes_trash ON changes (revision) WHERE version = 4;
"""
SCHEMA4 = """
CREATE TABLE changes (revision INTEGER PRIMARY KEY, current INTEGER NOT NULL, kind INTEGER NOT NULL, id BLOB NOT NULL,
    insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, content TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '', serial TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL DEFAULT 0,
    previous INTEGER, following INTEGER, ordinal INTEGER NOT NULL DEFAULT 0, oldest INTEGER);
CREATE INDEX changes_trash ON changes (revision) WHERE version = 4;
CREATE INDEX changes_trashed_ids ON changes (id) WHERE version = 4;
"""
NTH = "SELECT revision FROM changes WHERE id = ? AND version > 0 ORDER BY revision DESC LIMIT 1 OFFSET ?"
INSERT3 = "INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
RETIRE3 = "UPDATE changes SET current = 0 WHERE revision = ? AND current = 1"
INSERT4 = ("INSERT INTO changes (revision, current, kind, id, insert_us, update_us, content, author, serial, version, "
           "previous, ordinal, oldest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
RETIRE4 = ("UPDATE changes SET current = 0, following = ?2 WHERE revision = ?1 AND current = 1 "
           "RETURNING version, ordinal, oldest")
FOLLOWING = "SELECT following FROM changes WHERE revision = ?"
MODES = ("schema3-K50", "schema4-K50", "K0")


def update(db, mode, memo, current, revision):
    """One update of the writer's statements in `mode`; returns nothing (current[memo] is moved)."""
    previous = current[memo]
    current[memo] = revision
    if mode == "schema3-K50":
        db.execute(RETIRE3, (previous,))
        db.execute(INSERT3, (revision, 1, 2, memo, 1, 2, "x" * 64, "alice", "01", 2))
        db.execute(NTH, (memo, 50)).fetchone()
        return
    version, ordinal, oldest = db.execute(RETIRE4, (previous, revision)).fetchone()
    if mode == "K0":
        db.execute(INSERT4, (revision, 1, 2, memo, 1, 2, "x" * 64, "alice", "01", 0, None, 0, None))
        return
    ordinal += 1
    oldest = oldest or previous
    if ordinal > 50:
        oldest = db.execute(FOLLOWING, (oldest,)).fetchone()[0]
    db.execute(INSERT4, (revision, 1, 2, memo, 1, 2, "x" * 64, "alice", "01", 2, previous, ordinal, oldest))


def run(mode, folder):
    path = os.path.join(folder, f"{mode}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(SCHEMA3 if mode == "schema3-K50" else SCHEMA4)
    ids = [uuid.uuid4().bytes for _ in range(MEMOS)]
    current = {}
    revision = 0
    db.execute("BEGIN")
    for memo in ids:
        revision += 1
        current[memo] = revision
        if mode == "schema3-K50":
            db.execute(INSERT3, (revision, 1, 1, memo, 1, 1, "x" * 64, "alice", "01", 1))
        else:
            db.execute(INSERT4, (revision, 1, 1, memo, 1, 1, "x" * 64, "alice", "01", 0 if mode == "K0" else 1,
                                 None, 1, None))
    for _ in range(BEFORE):
        for memo in ids:
            revision += 1
            update(db, mode, memo, current, revision)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA wal_autocheckpoint=0")
    pick = random.Random(1)
    start = time.perf_counter()
    for _ in range(BATCHES):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(BATCH):
            revision += 1
            update(db, mode, ids[pick.randrange(MEMOS)], current, revision)
        db.execute("COMMIT")
    seconds = time.perf_counter() - start
    page = db.execute("PRAGMA page_size").fetchone()[0]
    pages = os.path.getsize(path + "-wal") / BATCHES / (page + 24)
    db.close()
    return BATCHES * BATCH / seconds, pages


with tempfile.TemporaryDirectory(dir="/tmp") as folder:
    results = {mode: [] for mode in MODES}
    for run_index in range(RUNS):
        for mode in MODES if run_index % 2 == 0 else tuple(reversed(MODES)):
            ops, pages = run(mode, folder)
            results[mode].append((ops, pages))
            print(f"   run {run_index + 1} {mode}: {ops:,.0f} updates/s, {pages:.1f} WAL pages per commit",
                  file=sys.stderr)
    off = statistics.median(r[0] for r in results["K0"])
    print(f"SQLite alone, {MEMOS} memos ({BEFORE} updates each before), commits of {BATCH} updates, medians of {RUNS}:")
    for mode in MODES:
        ops = statistics.median(r[0] for r in results[mode])
        pages = statistics.median(r[1] for r in results[mode])
        print(f"  {mode}: {ops:,.0f} updates/s, {pages:.1f} WAL pages per commit, ratio to K0 {ops / off:.2f}")
