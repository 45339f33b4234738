import MemoModel
/// The tables and functions of a memo database, version 2 (version 1 plus authors, versions and the trash).
///
/// Revisions come from the one-row `memo_head`, locked first by every write (`memo_write`), so that commit order
/// is revision order and a failed write consumes no revision; a sequence would leave gaps on rollback and
/// transient holes under concurrency. `memo_changes` is the history every server's feed reads, kept after
/// `memo_floor`; contents are bytea so that identity is decided on bytes.
///
/// Version 2 records each change's author (`author_name`, `author_serial`, on the memo too) and marks the rows of
/// `memo_changes` that are kept versions (`vkind` 1, 2, 3: create, update, restore) or the delete of a memo in the
/// trash (`vkind` 4); such a row stays below the floor until it stops being one (a newer version pushes it out, the
/// memo leaves the trash, or the trash is purged by `memo_purge`), then goes at once when below the floor, or with
/// the next prune. Writes, prunes and purges take the head lock, so that one server at a time moves the floor.
enum PostgresSQL {
    /// The schema version this binary writes; a database at a newer one is refused, one at version 1 upgraded.
    static let schemaVersion: Int64 = 2

    /// The channel whose notifications carry the durable head after a claim, and the claiming server's changes when
    /// they fit (`FeedPayload`).
    static let channel = "memo_changes"

    static let createSchema = """
CREATE TABLE memo_schema (version integer NOT NULL);
CREATE TABLE memo_head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    revision bigint NOT NULL,
    last_insert bigint NOT NULL
);
CREATE TABLE memo_floor (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    revision bigint NOT NULL
);
CREATE TABLE memos (
    id uuid PRIMARY KEY,
    content bytea NOT NULL,
    insert_micros bigint NOT NULL,
    update_micros bigint NOT NULL,
    revision bigint NOT NULL
);
CREATE TABLE memo_changes (
    revision bigint PRIMARY KEY,
    kind smallint NOT NULL,
    id uuid NOT NULL,
    content bytea NOT NULL,
    insert_micros bigint NOT NULL,
    update_micros bigint NOT NULL
);
INSERT INTO memo_head (revision, last_insert) VALUES (0, 0);
INSERT INTO memo_floor (revision) VALUES (0);
INSERT INTO memo_schema VALUES (1);
""" + durableTable + upgradeToVersion2

    /// From version 1 to 2, in the caller's transaction: the author columns, the versions' marks (every memo's
    /// versions start with its current change, or a row of its own when that change was pruned; author empty),
    /// the trash (each memo whose last delete is still in the changes), the indexes and the functions.
    static let upgradeToVersion2 = """
ALTER TABLE memos ADD COLUMN author_name text NOT NULL DEFAULT '',
    ADD COLUMN author_serial text NOT NULL DEFAULT '';
ALTER TABLE memo_changes ADD COLUMN author_name text NOT NULL DEFAULT '',
    ADD COLUMN author_serial text NOT NULL DEFAULT '', ADD COLUMN vkind smallint NOT NULL DEFAULT 0;
UPDATE memo_changes c SET vkind = CASE c.kind WHEN 1 THEN 1 ELSE 2 END
    FROM memos m WHERE m.id = c.id AND m.revision = c.revision;
UPDATE memo_changes c SET vkind = 4 WHERE c.kind = 3
    AND c.revision = (SELECT max(d.revision) FROM memo_changes d WHERE d.id = c.id)
    AND NOT EXISTS (SELECT 1 FROM memos m WHERE m.id = c.id);
\(carryPrunedVersions)
CREATE INDEX memo_changes_versions ON memo_changes (id, revision) WHERE vkind > 0;
CREATE INDEX memo_changes_trash ON memo_changes (revision) WHERE vkind = 4;
DROP FUNCTION IF EXISTS memo_write(smallint[], uuid[], bytea[], bigint[], bigint[], bigint[], bigint, bigint);
\(writeFunction)
\(pruneFunction)
UPDATE memo_schema SET version = 2;
"""

    /// A memo whose current change was pruned (below the floor) gets its version as a row of its own, below the
    /// floor, so that its history starts with its current content: under the memo's own revision, which the
    /// pruned change had (so no change uses it).
    static let carryPrunedVersions = """
INSERT INTO memo_changes (revision, kind, id, content, insert_micros, update_micros, vkind)
    SELECT m.revision, CASE WHEN m.update_micros = m.insert_micros THEN 1 ELSE 2 END, m.id, m.content,
        m.insert_micros, m.update_micros, CASE WHEN m.update_micros = m.insert_micros THEN 1 ELSE 2 END
    FROM memos m WHERE NOT EXISTS (SELECT 1 FROM memo_changes c WHERE c.revision = m.revision);
"""

    /// Moves the floor up to `head - keep` and deletes the changes below it that are not kept versions or in the
    /// trash; under the head lock, one server at a time. `memo_purge` purges the trash; `memo_drop_versions` (a
    /// server with `--versions 0`, when it opens and with each purge pass) drops every kept version (not the trash
    /// entries): the rows below the floor go, the others stop being versions and go with the next prune.
    static let pruneFunction = """
CREATE OR REPLACE FUNCTION memo_prune(keep bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    target bigint;
    old_floor bigint;
BEGIN
    SELECT h.revision - keep INTO target FROM memo_head h WHERE h.one FOR UPDATE;
    SELECT f.revision INTO old_floor FROM memo_floor f WHERE f.one;
    UPDATE memo_floor SET revision = target WHERE one AND revision < target;
    IF FOUND THEN
        DELETE FROM memo_changes WHERE revision > old_floor AND revision <= target AND vkind = 0;
    END IF;
    RETURN (SELECT f.revision FROM memo_floor f WHERE f.one);
END
$$;
CREATE OR REPLACE FUNCTION memo_purge(before bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    floor_rev bigint;
    gone uuid[];
BEGIN
    PERFORM 1 FROM memo_head h WHERE h.one FOR UPDATE;
    SELECT f.revision INTO floor_rev FROM memo_floor f WHERE f.one;
    SELECT coalesce(array_agg(DISTINCT c.id), '{}') INTO gone FROM memo_changes c
        WHERE c.vkind = 4 AND c.update_micros < before;
    DELETE FROM memo_changes WHERE id = ANY(gone) AND vkind > 0 AND revision <= floor_rev;
    UPDATE memo_changes SET vkind = 0 WHERE id = ANY(gone) AND vkind > 0;
    RETURN coalesce(array_length(gone, 1), 0);
END
$$;
CREATE OR REPLACE FUNCTION memo_drop_versions() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    floor_rev bigint;
    dropped bigint;
    unmarked bigint;
BEGIN
    PERFORM 1 FROM memo_head h WHERE h.one FOR UPDATE;
    SELECT f.revision INTO floor_rev FROM memo_floor f WHERE f.one;
    DELETE FROM memo_changes WHERE vkind BETWEEN 1 AND 3 AND revision <= floor_rev;
    GET DIAGNOSTICS dropped = ROW_COUNT;
    UPDATE memo_changes SET vkind = 0 WHERE vkind BETWEEN 1 AND 3;
    GET DIAGNOSTICS unmarked = ROW_COUNT;
    RETURN dropped + unmarked;
END
$$;
"""

    /// One batch of writes in one statement: the server-side function takes the head lock and plans every write
    /// against the shared tables. The contents are `$14`, one bytea array in binary (`WriteCall.byteaArray`), so that
    /// the statement's text is the same for every batch and the writer prepares it once per connection.
    ///
    /// The statement's transaction commits without waiting for its WAL flush (`synchronous_commit` off for it
    /// alone), so that the head lock is released before the flush and the next server's batch can be planned
    /// while this one's flushes: the several servers' flushes then share `fsync`s (PostgreSQL's group commit)
    /// rather than taking turns under the lock. The server's claimer makes the batch durable with `durable`
    /// before anything is answered or handed on (the writer meanwhile sends its next batch), and the feeds read
    /// only up to what a `durable` call has claimed.
    static let write = "SELECT w.* FROM memo_write($1::smallint[], $2::uuid[], $14::bytea[], $3::bigint[], "
        + "$4::bigint[], $5::bigint[], $6::bigint, $7::bigint, $8::text[], $9::text[], $10::bigint[], "
        + "$11::boolean[], $12::integer, $13::boolean) w, set_config('synchronous_commit', 'off', true) s"

    /// Which revisions are durable: a row per slot, each a claim that every change up to its revision is flushed
    /// to PostgreSQL's WAL; the feeds read up to the largest. Slots (a connection's backend pid modulo 64) keep
    /// the servers' claims from queueing on one row lock through their flushes; two connections sharing a slot
    /// only take turns. Made at every start too (`PostgresSchema.ensure`), for a database made before it.
    static let durableTable = """
CREATE TABLE IF NOT EXISTS memo_durable (
    slot integer PRIMARY KEY,
    revision bigint NOT NULL
);

"""

    /// Claims durable every change committed before this statement, and waits for that claim's own flush (the
    /// connection's `synchronous_commit` is on): every commit this statement's snapshot sees is earlier in the
    /// WAL than its own commit record, so once the claim is flushed, they all are. The claim reads the head
    /// without its lock: it is a true claim whatever the other servers do meanwhile, and takes no turn with them.
    static let durable = """
        INSERT INTO memo_durable SELECT pg_backend_pid() % 64, h.revision FROM memo_head h WHERE h.one
        ON CONFLICT (slot) DO UPDATE SET revision = greatest(memo_durable.revision, excluded.revision)
        RETURNING revision
        """

    /// A restore's version `c` counts only when it is one of the memo's newest `keep` versions, `keep` being the
    /// calling server's `--versions`: another server over the same database may keep more (or, with K = 0, this
    /// server's last drop may be up to a purge interval old), and a restore must find what this server's `log`
    /// shows, as SQLite does (it keeps only K). With K = 0 it finds none: no version is kept.
    static let keptByThisServer = """
(SELECT count(*) FROM memo_changes d WHERE d.id = c.id AND d.vkind BETWEEN 1 AND 3 AND d.revision > c.revision) < keep
"""

    /// The common batch, creates of fresh ids without dates, in a few statements for the whole batch rather than
    /// four per write: one check, one insert into each table, the rows given back in order, the head moved. It
    /// gives what the loop of `writeFunction` gives for such a batch: each create's revision the head plus its
    /// place, its dates the insert clock's next (`base` onward, one apart, as the loop steps it), a version (`vkind`
    /// 1) when versions are kept, status 0. A batch that is anything else (another kind, a client's date, an id
    /// twice, an id live or with versions or a trash entry of its own, the insert clock within the batch's size of
    /// its cap, arrays of unequal lengths) takes the loop, as before. Its own string so that a test can make the
    /// function without it, the loop alone.
    ///
    /// The check probes each id's index entries (a `LATERAL` subquery per id, kept apart by `OFFSET 0`): written as
    /// `id = ANY(ids)`, it was planned as a scan of the whole table while the tables were small, and PL/pgSQL kept
    /// that plan for every batch after.
    static let createBatch = """
    n := coalesce(array_length(kinds, 1), 0);
    base := greatest(now, least(last, \(MemoDates.latestMicros - 1)) + 1);
    IF n > 0 AND base <= \(MemoDates.latestMicros + 1) - n AND 1 = ALL(kinds) AND array_length(ids, 1) = n
        AND array_length(contents, 1) = n AND array_length(names, 1) = n AND array_length(serials, 1) = n
        AND cardinality(array_remove(inserts, NULL)) = 0 AND cardinality(array_remove(updates, NULL)) = 0
        AND (SELECT count(DISTINCT u.id) FROM unnest(ids) u(id)) = n
        AND NOT EXISTS (SELECT 1 FROM unnest(ids) u(id),
            LATERAL (SELECT 1 FROM memos WHERE memos.id = u.id OFFSET 0) x)
        AND NOT EXISTS (SELECT 1 FROM unnest(ids) u(id),
            LATERAL (SELECT 1 FROM memo_changes c WHERE c.id = u.id AND c.vkind > 0 OFFSET 0) x) THEN
        INSERT INTO memos SELECT w.id, w.content, base + w.k - 1, base + w.k - 1, head + w.k, w.name, w.serial
            FROM unnest(ids, contents, names, serials) WITH ORDINALITY w(id, content, name, serial, k);
        INSERT INTO memo_changes SELECT head + w.k, 1, w.id, w.content, base + w.k - 1, base + w.k - 1, w.name,
            w.serial, CASE WHEN keep > 0 THEN 1 ELSE 0 END
            FROM unnest(ids, contents, names, serials) WITH ORDINALITY w(id, content, name, serial, k);
        RETURN QUERY SELECT 0::smallint, 1::smallint, w.id, w.content, base + w.k - 1, base + w.k - 1, head + w.k,
            w.name, w.serial, false
            FROM unnest(ids, contents, names, serials) WITH ORDINALITY w(id, content, name, serial, k) ORDER BY w.k;
        UPDATE memo_head SET revision = head + n, last_insert = base + n - 1 WHERE one;
        RETURN;
    END IF;
"""

    /// The write function, made with the schema and replaced at every start (`PostgresSchema.ensure`), so that a
    /// database made by an older memo-server gets this version. An update is dated now, or at the memo's insert
    /// date when that is in the future (never before it).
    static let writeFunction = """
CREATE OR REPLACE FUNCTION memo_write(
    kinds smallint[], ids uuid[], contents bytea[], inserts bigint[], updates bigint[], expected bigint[],
    now bigint, after bigint, names text[], serials text[], targets bigint[], merges boolean[], keep integer,
    trash boolean
) RETURNS TABLE (
    o_status smallint, o_kind smallint, o_id uuid, o_content bytea, o_insert bigint, o_update bigint,
    o_revision bigint, o_name text, o_serial text, o_restored boolean
) LANGUAGE plpgsql AS $$
DECLARE
    head bigint;
    start_head bigint;
    last bigint;
    floor_rev bigint;
    m memos%ROWTYPE;
    present boolean;
    ins bigint;
    upd bigint;
    body bytea;
    found_rev bigint;
    cutoff bigint;
    vk smallint;
    history boolean;
    n integer;
    base bigint;
BEGIN
    SELECT h.revision, h.last_insert INTO head, last FROM memo_head h WHERE h.one FOR UPDATE;
    SELECT f.revision INTO floor_rev FROM memo_floor f WHERE f.one;
    start_head := head;
    -- The other servers' changes since the caller's last one, committed before this lock was granted: the
    -- caller applies them with its own without a read of its own (status 5, first). Bounded above by the head
    -- (no change is above it) so that every plan of it is a range of the revision index: with the lower bounds
    -- alone, a plan made while the table was small or not yet analyzed (PL/pgSQL keeps it) scans the whole
    -- table under the head lock, milliseconds at 20,000 changes, while the other servers wait.
    IF head > after AND head - after <= 1000 THEN
        RETURN QUERY SELECT 5::smallint, c.kind, c.id, c.content, c.insert_micros, c.update_micros, c.revision,
            c.author_name, c.author_serial, c.vkind = 3
            FROM memo_changes c WHERE c.revision > after AND c.revision > floor_rev AND c.revision <= head
            ORDER BY c.revision;
    END IF;
\(createBatch)
    FOR i IN 1 .. coalesce(array_length(kinds, 1), 0) LOOP
        SELECT * INTO m FROM memos WHERE memos.id = ids[i];
        present := FOUND;
        body := contents[i];
        vk := 0;
        -- Whether the memo has rows of its own that are versions or its trash entry: a create of a fresh id has
        -- none, and skips the statements that would only find none (the trash's, the versions' cutoff).
        history := true;
        IF kinds[i] = 1 OR (kinds[i] = 4 AND NOT present) THEN
            IF kinds[i] = 4 THEN
                -- A restore from the trash: back under its id, at its insert date, with its last content or the
                -- version asked for (status 8: not in the trash, 7: no such version, 3: not the expected delete).
                SELECT c.revision, c.content, c.insert_micros INTO found_rev, body, ins FROM memo_changes c
                    WHERE c.id = ids[i] AND c.vkind = 4 ORDER BY c.revision DESC LIMIT 1;
                IF NOT FOUND THEN
                    RETURN QUERY SELECT 8::smallint, 4::smallint, ids[i], NULL::bytea, NULL::bigint, NULL::bigint,
                        NULL::bigint, NULL::text, NULL::text, NULL::boolean;
                    CONTINUE;
                END IF;
                IF expected[i] IS NOT NULL AND expected[i] <> found_rev THEN
                    RETURN QUERY SELECT 3::smallint, 4::smallint, ids[i], NULL::bytea, NULL::bigint, NULL::bigint,
                        found_rev, NULL::text, NULL::text, NULL::boolean;
                    CONTINUE;
                END IF;
                IF targets[i] IS NOT NULL THEN
                    SELECT c.content INTO body FROM memo_changes c
                        WHERE c.revision = targets[i] AND c.id = ids[i] AND c.vkind BETWEEN 1 AND 3
                            AND \(keptByThisServer);
                    IF NOT FOUND THEN
                        RETURN QUERY SELECT 7::smallint, 4::smallint, ids[i], NULL::bytea, NULL::bigint,
                            NULL::bigint, targets[i], NULL::text, NULL::text, NULL::boolean;
                        CONTINUE;
                    END IF;
                END IF;
                upd := greatest(now, ins);
                vk := 3;
            ELSE
                IF present THEN
                    IF m.content = contents[i] THEN
                        RETURN QUERY SELECT 1::smallint, 1::smallint, m.id, m.content, m.insert_micros,
                            m.update_micros, m.revision, m.author_name, m.author_serial, false;
                    ELSE
                        RETURN QUERY SELECT 3::smallint, 1::smallint, m.id, NULL::bytea, NULL::bigint,
                            NULL::bigint, m.revision, NULL::text, NULL::text, NULL::boolean;
                    END IF;
                    CONTINUE;
                END IF;
                -- The insert clock: only a create without a date moves it (a client's dates never do), and it
                -- stops at 9999-12-31, so that its step cannot overflow.
                IF inserts[i] IS NULL THEN
                    ins := greatest(now, least(last, \(MemoDates.latestMicros - 1)) + 1);
                    last := ins;
                ELSE
                    ins := inserts[i];
                END IF;
                upd := coalesce(updates[i], greatest(now, ins));
                IF upd < ins THEN
                    RETURN QUERY SELECT 4::smallint, 1::smallint, ids[i], NULL::bytea, ins, upd, NULL::bigint,
                        NULL::text, NULL::text, NULL::boolean;
                    CONTINUE;
                END IF;
                vk := 1;
                history := EXISTS (SELECT 1 FROM memo_changes c WHERE c.id = ids[i] AND c.vkind > 0);
            END IF;
            head := head + 1;
            -- A memo back from the trash (or a new one under a trashed id) leaves the trash.
            IF history THEN
                DELETE FROM memo_changes c WHERE c.id = ids[i] AND c.vkind = 4 AND c.revision <= floor_rev;
                UPDATE memo_changes c SET vkind = 0 WHERE c.id = ids[i] AND c.vkind = 4;
            END IF;
            INSERT INTO memos VALUES (ids[i], body, ins, upd, head, names[i], serials[i]);
            INSERT INTO memo_changes VALUES (head, 1, ids[i], body, ins, upd, names[i], serials[i],
                CASE WHEN keep > 0 THEN vk ELSE 0 END);
            -- The row by assignment (PL/pgSQL's simple expressions) and RETURN NEXT, not a query per write.
            o_status := 0; o_kind := 1; o_id := ids[i]; o_content := body; o_insert := ins; o_update := upd;
            o_revision := head; o_name := names[i]; o_serial := serials[i]; o_restored := vk = 3;
            RETURN NEXT;
        ELSIF NOT present THEN
            RETURN QUERY SELECT 2::smallint, kinds[i], ids[i], NULL::bytea, NULL::bigint, NULL::bigint,
                NULL::bigint, NULL::text, NULL::text, NULL::boolean;
            CONTINUE;
        ELSIF expected[i] IS NOT NULL AND expected[i] <> m.revision THEN
            RETURN QUERY SELECT 3::smallint, kinds[i], m.id, NULL::bytea, NULL::bigint, NULL::bigint, m.revision,
                NULL::text, NULL::text, NULL::boolean;
            CONTINUE;
        ELSIF kinds[i] = 2 OR kinds[i] = 4 THEN
            vk := 2;
            IF kinds[i] = 4 THEN
                -- A restore of a live memo's version (status 6: no revision named, 7: no such version).
                IF targets[i] IS NULL THEN
                    RETURN QUERY SELECT 6::smallint, 4::smallint, m.id, NULL::bytea, NULL::bigint, NULL::bigint,
                        m.revision, NULL::text, NULL::text, NULL::boolean;
                    CONTINUE;
                END IF;
                SELECT c.content INTO body FROM memo_changes c
                    WHERE c.revision = targets[i] AND c.id = m.id AND c.vkind BETWEEN 1 AND 3
                        AND \(keptByThisServer);
                IF NOT FOUND THEN
                    RETURN QUERY SELECT 7::smallint, 4::smallint, m.id, NULL::bytea, NULL::bigint, NULL::bigint,
                        targets[i], NULL::text, NULL::text, NULL::boolean;
                    CONTINUE;
                END IF;
                vk := 3;
            END IF;
            head := head + 1;
            UPDATE memos SET content = body, update_micros = greatest(now, m.insert_micros),
                revision = head, author_name = names[i], author_serial = serials[i] WHERE memos.id = m.id;
            INSERT INTO memo_changes VALUES (head, 2, m.id, body, m.insert_micros,
                greatest(now, m.insert_micros), names[i], serials[i], CASE WHEN keep > 0 THEN vk ELSE 0 END);
            o_status := 0; o_kind := 2; o_id := m.id; o_content := body; o_insert := m.insert_micros;
            o_update := greatest(now, m.insert_micros); o_revision := head; o_name := names[i];
            o_serial := serials[i]; o_restored := vk = 3;
            RETURN NEXT;
        ELSE
            head := head + 1;
            DELETE FROM memos WHERE memos.id = m.id;
            -- A delete's change is dated when it happened (as the other stores date it), and is the memo's
            -- trash entry; with no trash the memo's versions go now.
            INSERT INTO memo_changes VALUES (head, 3, m.id, m.content, m.insert_micros,
                greatest(now, m.insert_micros), names[i], serials[i], CASE WHEN trash THEN 4 ELSE 0 END);
            IF NOT trash THEN
                DELETE FROM memo_changes c WHERE c.id = m.id AND c.vkind > 0 AND c.revision <= floor_rev;
                UPDATE memo_changes c SET vkind = 0 WHERE c.id = m.id AND c.vkind > 0;
            END IF;
            o_status := 0; o_kind := 3; o_id := m.id; o_content := m.content; o_insert := m.insert_micros;
            o_update := greatest(now, m.insert_micros); o_revision := head; o_name := names[i];
            o_serial := serials[i]; o_restored := false;
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- The memo's versions beyond the newest `keep` stop being versions (a fresh id's one version is not).
        IF keep > 0 AND history THEN
            SELECT c.revision INTO cutoff FROM memo_changes c WHERE c.id = ids[i] AND c.vkind BETWEEN 1 AND 3
                ORDER BY c.revision DESC OFFSET keep LIMIT 1;
            IF FOUND THEN
                DELETE FROM memo_changes c WHERE c.id = ids[i] AND c.vkind BETWEEN 1 AND 3
                    AND c.revision <= least(cutoff, floor_rev);
                UPDATE memo_changes c SET vkind = 0 WHERE c.id = ids[i] AND c.vkind BETWEEN 1 AND 3
                    AND c.revision <= cutoff;
            END IF;
        END IF;
    END LOOP;
    IF head <> start_head THEN
        UPDATE memo_head SET revision = head, last_insert = last WHERE one;
    END IF;
END
$$;
"""

    /// What other servers' feeds wait for: the durable head, then `$1`, what the claimer appends (its own changes
    /// the claim covered, encoded by `FeedPayload.suffix`: PostgreSQL runs no query for them), sent by the claimer
    /// right after its claim (`durable`) in the same round trip. Committed without waiting for a flush: a
    /// notifying transaction holds PostgreSQL's one notification lock until it ends, and several servers' flushes
    /// would queue on it.
    static let notifyDurable = """
        SELECT pg_notify('\(channel)', max(d.revision)::text || $1)
        FROM memo_durable d, set_config('synchronous_commit', 'off', true) s
        """

    /// The floor and the changes after `$1`, read at one instant (one statement, one snapshot). Only the changes
    /// above the floor (the rows below it are kept versions and trash entries, not the history), and only those a
    /// `durable` claim covers, so that no server hands out a change a crash of PostgreSQL could still take back
    /// (the writers commit without waiting for the flush; see `write`).
    static let changesAfter = """
        SELECT f.revision, c.revision, c.kind, c.id, c.content, c.insert_micros, c.update_micros, c.author_name,
            c.author_serial, c.vkind
        FROM memo_floor f LEFT JOIN LATERAL (
            SELECT * FROM memo_changes WHERE revision > $1::bigint AND revision > f.revision
                AND revision <= (SELECT coalesce(max(d.revision), 0) FROM memo_durable d)
            ORDER BY revision LIMIT $2::bigint
        ) c ON true
        ORDER BY c.revision
        """

    /// The committed head and the durable head at one instant: a commit that no claim covers for long shows
    /// there (`PostgresFeed` claims it). A statement of its own, run once a second, not columns of `changesAfter`:
    /// a feed reads that often when two servers write, and every write updates the head's row.
    static let heads = """
        SELECT h.revision, (SELECT coalesce(max(d.revision), 0) FROM memo_durable d) FROM memo_head h WHERE h.one
        """
}
