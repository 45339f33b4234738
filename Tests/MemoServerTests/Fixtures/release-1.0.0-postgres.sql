--
-- PostgreSQL database dump
--

\restrict yfMEnkvjkaTEh8mbiEQQsw4kWAiQSJSGZEAXlSTPJyRcUeqt4ldTlVmY39GSpTE

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: memo_prune(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.memo_prune(keep bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: memo_write(smallint[], uuid[], bytea[], bigint[], bigint[], bigint[], bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.memo_write(kinds smallint[], ids uuid[], contents bytea[], inserts bigint[], updates bigint[], expected bigint[], now bigint, after bigint) RETURNS TABLE(o_status smallint, o_kind smallint, o_id uuid, o_content bytea, o_insert bigint, o_update bigint, o_revision bigint)
    LANGUAGE plpgsql
    AS $$
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
                ins := greatest(now, least(last, 253402300799999998) + 1);
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: memo_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memo_changes (
    revision bigint NOT NULL,
    kind smallint NOT NULL,
    id uuid NOT NULL,
    content bytea NOT NULL,
    insert_micros bigint NOT NULL,
    update_micros bigint NOT NULL
);


--
-- Name: memo_floor; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memo_floor (
    one boolean DEFAULT true NOT NULL,
    revision bigint NOT NULL,
    CONSTRAINT memo_floor_one_check CHECK (one)
);


--
-- Name: memo_head; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memo_head (
    one boolean DEFAULT true NOT NULL,
    revision bigint NOT NULL,
    last_insert bigint NOT NULL,
    CONSTRAINT memo_head_one_check CHECK (one)
);


--
-- Name: memo_schema; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memo_schema (
    version integer NOT NULL
);


--
-- Name: memos; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memos (
    id uuid NOT NULL,
    content bytea NOT NULL,
    insert_micros bigint NOT NULL,
    update_micros bigint NOT NULL,
    revision bigint NOT NULL
);


--
-- Data for Name: memo_changes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.memo_changes (revision, kind, id, content, insert_micros, update_micros) FROM stdin;
1	1	3d76b2ea-011b-40a7-a41c-6cc5ce7b9638	\\x6669727374206d656d6f2c206b65707420617320697420776173	1796153321810206	1796153321810206
2	1	07f41d60-2d65-4443-b05d-06b5b3f7ae94	\\xed959ceab88020eba994ebaaa83a20ec9588eb8595ed9598ec84b8ec9a942c20ec84b8eab384	1796153322472226	1796153322472226
3	1	bf5f961c-3689-46a8-a296-a1ca46bcfbbc	\\x656469746564206d656d6f2c2066697273742074657874	1796153322984188	1796153322984188
4	2	bf5f961c-3689-46a8-a296-a1ca46bcfbbc	\\x656469746564206d656d6f2c207365636f6e642074657874	1796153322984188	1796153323211073
5	2	bf5f961c-3689-46a8-a296-a1ca46bcfbbc	\\x656469746564206d656d6f2c20746869726420746578740a776974682061207365636f6e64206c696e65	1796153322984188	1796153323391536
6	1	95208466-7566-4930-8e3c-c3af54178f6d	\\x64656c65746564206d656d6f	1796153323484621	1796153323484621
7	3	95208466-7566-4930-8e3c-c3af54178f6d	\\x64656c65746564206d656d6f	1796153323484621	1796153323880387
\.


--
-- Data for Name: memo_floor; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.memo_floor (one, revision) FROM stdin;
t	0
\.


--
-- Data for Name: memo_head; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.memo_head (one, revision, last_insert) FROM stdin;
t	7	1796153323484621
\.


--
-- Data for Name: memo_schema; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.memo_schema (version) FROM stdin;
1
\.


--
-- Data for Name: memos; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.memos (id, content, insert_micros, update_micros, revision) FROM stdin;
3d76b2ea-011b-40a7-a41c-6cc5ce7b9638	\\x6669727374206d656d6f2c206b65707420617320697420776173	1796153321810206	1796153321810206	1
07f41d60-2d65-4443-b05d-06b5b3f7ae94	\\xed959ceab88020eba994ebaaa83a20ec9588eb8595ed9598ec84b8ec9a942c20ec84b8eab384	1796153322472226	1796153322472226	2
bf5f961c-3689-46a8-a296-a1ca46bcfbbc	\\x656469746564206d656d6f2c20746869726420746578740a776974682061207365636f6e64206c696e65	1796153322984188	1796153323391536	5
\.


--
-- Name: memo_changes memo_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memo_changes
    ADD CONSTRAINT memo_changes_pkey PRIMARY KEY (revision);


--
-- Name: memo_floor memo_floor_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memo_floor
    ADD CONSTRAINT memo_floor_pkey PRIMARY KEY (one);


--
-- Name: memo_head memo_head_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memo_head
    ADD CONSTRAINT memo_head_pkey PRIMARY KEY (one);


--
-- Name: memos memos_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memos
    ADD CONSTRAINT memos_pkey PRIMARY KEY (id);


--
-- PostgreSQL database dump complete
--

\unrestrict yfMEnkvjkaTEh8mbiEQQsw4kWAiQSJSGZEAXlSTPJyRcUeqt4ldTlVmY39GSpTE

