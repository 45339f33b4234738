import MemoModel
/// The tables and functions of a memo database, version 1.
///
/// Revisions come from the one-row `memo_head`, locked first by every write (`memo_write`), so that commit order
/// is revision order and a failed write consumes no revision; a sequence would leave gaps on rollback and
/// transient holes under concurrency. `memo_changes` is the history every server's feed reads, kept after
/// `memo_floor`; contents are bytea so that identity is decided on bytes.
enum PostgresSQL {
    /// The schema version this binary writes; a database at a newer one is refused.
    static let schemaVersion: Int64 = 1

    /// The channel whose notifications carry the head revision after a write commits (a hint only).
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
""" + durableTable + writeFunction + """
CREATE FUNCTION memo_prune(keep bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    target bigint;
BEGIN
    SELECT h.revision - keep INTO target FROM memo_head h WHERE h.one;
    UPDATE memo_floor SET revision = target WHERE one AND revision < target;
    IF FOUND THEN
        DELETE FROM memo_changes WHERE revision <= target;
    END IF;
    RETURN (SELECT f.revision FROM memo_floor f WHERE f.one);
END
$$;
INSERT INTO memo_schema VALUES (1);
"""

    /// One batch of writes in one statement: the server-side function takes the head lock and plans every write
    /// against the shared tables. Contents follow as one bytea parameter each, from `$8` on.
    ///
    /// The statement's transaction commits without waiting for its WAL flush (`synchronous_commit` off for it
    /// alone), so that the head lock is released before the flush and the next server's batch can be planned
    /// while this one's flushes: the several servers' flushes then share `fsync`s (PostgreSQL's group commit)
    /// rather than taking turns under the lock. The writer makes the batch durable with `durable` before it
    /// answers or hands anything on, and the feeds read only up to what a `durable` call has claimed.
    static func write(count: Int) -> String {
        let contents = (0..<count).map { "$\($0 + 8)::bytea" }.joined(separator: ",")
        return "SELECT w.* FROM memo_write($1::smallint[], $2::uuid[], ARRAY[\(contents)]::bytea[], $3::bigint[], "
            + "$4::bigint[], $5::bigint[], $6::bigint, $7::bigint) w, "
            + "set_config('synchronous_commit', 'off', true) s"
    }

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

    /// The write function, made with the schema and replaced at every start (`PostgresSchema.ensure`), so that a
    /// database made by an older memo-server gets this version. An update is dated now, or at the memo's insert
    /// date when that is in the future (never before it).
    static let writeFunction = """
CREATE OR REPLACE FUNCTION memo_write(
    kinds smallint[], ids uuid[], contents bytea[], inserts bigint[], updates bigint[], expected bigint[],
    now bigint, after bigint
) RETURNS TABLE (
    o_status smallint, o_kind smallint, o_id uuid, o_content bytea, o_insert bigint, o_update bigint,
    o_revision bigint
) LANGUAGE plpgsql AS $$
DECLARE
    head bigint;
    start_head bigint;
    last bigint;
    m memos%ROWTYPE;
    present boolean;
    ins bigint;
    upd bigint;
BEGIN
    SELECT h.revision, h.last_insert INTO head, last FROM memo_head h WHERE h.one FOR UPDATE;
    start_head := head;
    -- The other servers' changes since the caller's last one, committed before this lock was granted: the
    -- caller applies them with its own without a read of its own (status 5, first).
    IF head > after AND head - after <= 1000 THEN
        RETURN QUERY SELECT 5::smallint, c.kind, c.id, c.content, c.insert_micros, c.update_micros, c.revision
            FROM memo_changes c WHERE c.revision > after ORDER BY c.revision;
    END IF;
    FOR i IN 1 .. coalesce(array_length(kinds, 1), 0) LOOP
        SELECT * INTO m FROM memos WHERE memos.id = ids[i];
        present := FOUND;
        IF kinds[i] = 1 THEN
            IF present THEN
                IF m.content = contents[i] THEN
                    RETURN QUERY SELECT 1::smallint, 1::smallint, m.id, m.content, m.insert_micros,
                        m.update_micros, m.revision;
                ELSE
                    RETURN QUERY SELECT 3::smallint, 1::smallint, m.id, NULL::bytea, NULL::bigint, NULL::bigint,
                        m.revision;
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
                RETURN QUERY SELECT 4::smallint, 1::smallint, ids[i], NULL::bytea, ins, upd, NULL::bigint;
                CONTINUE;
            END IF;
            head := head + 1;
            INSERT INTO memos VALUES (ids[i], contents[i], ins, upd, head);
            INSERT INTO memo_changes VALUES (head, 1, ids[i], contents[i], ins, upd);
            RETURN QUERY SELECT 0::smallint, 1::smallint, ids[i], contents[i], ins, upd, head;
        ELSIF NOT present THEN
            RETURN QUERY SELECT 2::smallint, kinds[i], ids[i], NULL::bytea, NULL::bigint, NULL::bigint,
                NULL::bigint;
        ELSIF expected[i] IS NOT NULL AND expected[i] <> m.revision THEN
            RETURN QUERY SELECT 3::smallint, kinds[i], m.id, NULL::bytea, NULL::bigint, NULL::bigint, m.revision;
        ELSIF kinds[i] = 2 THEN
            head := head + 1;
            UPDATE memos SET content = contents[i], update_micros = greatest(now, m.insert_micros),
                revision = head WHERE memos.id = m.id;
            INSERT INTO memo_changes VALUES (head, 2, m.id, contents[i], m.insert_micros,
                greatest(now, m.insert_micros));
            RETURN QUERY SELECT 0::smallint, 2::smallint, m.id, contents[i], m.insert_micros,
                greatest(now, m.insert_micros), head;
        ELSE
            head := head + 1;
            DELETE FROM memos WHERE memos.id = m.id;
            -- A delete's change is dated when it happened (as the other stores date it).
            INSERT INTO memo_changes VALUES (head, 3, m.id, m.content, m.insert_micros,
                greatest(now, m.insert_micros));
            RETURN QUERY SELECT 0::smallint, 3::smallint, m.id, m.content, m.insert_micros,
                greatest(now, m.insert_micros), head;
        END IF;
    END LOOP;
    IF head <> start_head THEN
        UPDATE memo_head SET revision = head, last_insert = last WHERE one;
    END IF;
END
$$;
"""

    /// The hint other servers' feeds wait for: the durable head, sent by the writer right after its batch's claim
    /// (`durable`) in the same round trip. Committed without waiting for a flush: a notifying transaction holds
    /// PostgreSQL's one notification lock until it ends, and several servers' flushes would queue on it.
    static let notifyDurable = """
        SELECT pg_notify('\(channel)', max(d.revision)::text)
        FROM memo_durable d, set_config('synchronous_commit', 'off', true) s
        """

    /// The floor and the changes after `$1`, read at one instant (one statement, one snapshot): only those a
    /// `durable` claim covers, so that no server hands out a change a crash of PostgreSQL could still take back
    /// (the writers commit without waiting for the flush; see `write`).
    static let changesAfter = """
        SELECT f.revision, c.revision, c.kind, c.id, c.content, c.insert_micros, c.update_micros
        FROM memo_floor f LEFT JOIN LATERAL (
            SELECT * FROM memo_changes WHERE revision > $1::bigint
                AND revision <= (SELECT coalesce(max(d.revision), 0) FROM memo_durable d)
            ORDER BY revision LIMIT $2::bigint
        ) c ON true
        ORDER BY c.revision
        """
}
