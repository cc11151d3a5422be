-- Source schema and rows for the migrate test: every kind of type pgrelay maps,
-- awkward text, NULL-heavy and TOASTed columns, a non-public schema with a
-- mixed-case name, and tables of each replica identity kind.
CREATE TYPE e2e_mood AS ENUM ('sad', 'ok', 'happy', 'it''s "complicated"');
CREATE DOMAIN e2e_posint AS int CHECK (VALUE > 0);
CREATE TYPE e2e_pair AS (label text, amount numeric(10,2));

CREATE TABLE types_all (
    id       bigint PRIMARY KEY,
    i2       int2,
    i4       int4 NOT NULL,
    i8       int8,
    num      numeric(20,6),
    num_free numeric,
    f8       float8,
    f4       real,
    txt      text,
    vc       varchar(40),
    raw      bytea,
    flag     bool,
    day      date,
    at       timestamptz,
    ts       timestamp(3),
    uid      uuid,
    doc      jsonb,
    ints     int[],
    words    text[],
    mood     e2e_mood,
    pos      e2e_posint,
    pair     e2e_pair,
    span     interval,
    addr     inet,
    sparse   text,
    big      text
);

INSERT INTO types_all
SELECT i,
       (i % 32000)::int2,
       i * 7,
       i::int8 * 1000000007,
       round((i * 3.14159)::numeric, 6),
       (i::numeric / 7),
       i / 3.0,
       (i / 9.0)::real,
       'row ' || i || E'\ttab\nnewline \\ backslash ünïcødé 🐘 ''quote''',
       'vc' || i,
       decode(md5(i::text), 'hex') || '\x00ff5c0a'::bytea,
       i % 3 = 0,
       date '2000-01-01' + i,
       timestamptz '2024-02-29 12:34:56.789012+05:30' + i * interval '1 hour',
       timestamp '1999-12-31 23:59:59.999' + i * interval '1 minute',
       md5('uid' || i)::uuid,
       jsonb_build_object('id', i, 'name', 'n' || i, 'tags', jsonb_build_array('a', i, NULL), 'esc', E'q"\\\n\u00e9'),
       ARRAY[i, NULL, -i],
       ARRAY['a b', 'c,d', E'e"f', NULL, 'g\h'],
       (ARRAY['sad', 'ok', 'happy', 'it''s "complicated"'])[1 + i % 4]::e2e_mood,
       i,
       ROW('p' || i, i * 1.5)::e2e_pair,
       make_interval(days => i, secs => i / 10.0),
       ('10.0.' || (i % 256) || '.' || (i % 7))::inet,
       CASE WHEN i % 10 = 0 THEN 'sparse ' || i END,
       CASE WHEN i % 50 = 0 THEN (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 400) g) END
FROM generate_series(1, 600) i;

-- Edge values.
INSERT INTO types_all (id, i2, i4, i8, num, num_free, f8, f4, txt, vc, raw, flag, day, at, ts, uid, doc, ints, words, mood, pos, pair, span, addr, sparse, big) VALUES
 (1001, -32768, -2147483648, -9223372036854775808, -99999999999999.999999, 'NaN', 'NaN', 'Infinity', '', '', '\x'::bytea, false, '-infinity', '-infinity', '-infinity', '00000000-0000-0000-0000-000000000000', '{}', '{}', '{}', 'sad', 1, ROW(NULL, NULL), '-178000000 years', '::1', NULL, NULL),
 (1002, 32767, 2147483647, 9223372036854775807, 99999999999999.999999, '1e-100', 'Infinity', '-Infinity', E'\\N', 'x', '\x5c4e'::bytea, true, 'infinity', 'infinity', 'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '[1, "two", {"three": [3]}]', '{{1,2},{3,4}}', '{{"x","y"},{"z",NULL}}', 'happy', 2147483647, ROW('', 0), '0', '2001:db8::/32', 'x', ''),
 (1003, 0, 0, 0, 0, -0.0, '-0', 1.17549435e-38, E'\r\n\\r\\n\b\f\v', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'null', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (1004, 1, 1, 1, 1, 12345678901234567890.123456789012345678901234567890, 5e-324, 1e-37, repeat('ü', 5000), repeat('€', 40), decode(repeat('00ff', 6000), 'hex'), true, '4713-01-01 BC', '4713-01-01 00:00:00+00 BC', '294276-12-31 23:59:59.999', gen_random_uuid(), '"a string"', ARRAY[NULL]::int[], ARRAY['']::text[], 'ok', 3, ROW(E'tab\there', -1.25), '1 year 2 mons 3 days 04:05:06.789', '192.168.0.1/24', repeat('s', 3000), repeat('toast me ', 2000));

-- A mixed-case table in a schema of its own.
CREATE SCHEMA "E2e App";
CREATE TABLE "E2e App"."Order Lines" (
    "Order" int,
    "Line"  int,
    "Note"  text,
    PRIMARY KEY ("Order", "Line")
);
INSERT INTO "E2e App"."Order Lines" SELECT i / 10, i % 10, CASE WHEN i % 3 = 0 THEN 'n' || i END FROM generate_series(1, 300) i;

-- Replica identity FULL, with duplicate rows and NULLs.
CREATE TABLE full_ident (a int, b text, c numeric);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
INSERT INTO full_ident VALUES (1, 'x', 1.5), (1, 'x', 1.5), (2, NULL, NULL), (NULL, NULL, NULL), (NULL, NULL, NULL), (3, 'y', 2);

-- Replica identity through a unique index over NOT NULL columns.
CREATE TABLE index_ident (code text NOT NULL, region int NOT NULL, qty int, UNIQUE (code, region));
ALTER TABLE index_ident REPLICA IDENTITY USING INDEX index_ident_code_region_key;
INSERT INTO index_ident SELECT 'c' || i, i % 5, i FROM generate_series(1, 200) i;

-- A secondary index and a foreign key between replicated tables.
CREATE TABLE parent (id int PRIMARY KEY, name text);
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id), v int);
CREATE INDEX child_parent_idx ON child (parent_id);
INSERT INTO parent SELECT i, 'p' || i FROM generate_series(1, 50) i;
INSERT INTO child SELECT i, 1 + i % 50, i FROM generate_series(1, 500) i;
