-- Tables of the replicate test, created before pgrelay starts (their rows
-- arrive through the snapshot copy).
CREATE TYPE e2e_color AS ENUM ('red', 'green', 'blue');
CREATE TABLE items (
    id    int PRIMARY KEY,
    name  text NOT NULL,
    price numeric(12,2),
    tags  text[],
    color e2e_color,
    meta  jsonb,
    seen  timestamptz DEFAULT now()
);
INSERT INTO items SELECT i, 'item ' || i, i * 1.25, ARRAY['t' || i % 3], (ARRAY['red','green','blue'])[1 + i % 3]::e2e_color, jsonb_build_object('i', i)
FROM generate_series(1, 200) i;

CREATE TABLE full_rows (a int, b text, c float8);
ALTER TABLE full_rows REPLICA IDENTITY FULL;
INSERT INTO full_rows VALUES (1, 'dup', 1), (1, 'dup', 1), (1, 'dup', 1), (2, NULL, NULL), (NULL, NULL, NULL), (NULL, NULL, NULL), (3, 'three', 'NaN');

CREATE TABLE docs (id int PRIMARY KEY, title text, body text, small int);
INSERT INTO docs SELECT i, 'doc ' || i, (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 500) g), i FROM generate_series(1, 20) i;

CREATE TABLE trunc_me (id int PRIMARY KEY, v text);
INSERT INTO trunc_me SELECT i, 'v' || i FROM generate_series(1, 100) i;
CREATE TABLE trunc_ref (id int PRIMARY KEY, v text);
INSERT INTO trunc_ref SELECT i, 'r' || i FROM generate_series(1, 50) i;

CREATE TABLE evolve (id int PRIMARY KEY, qty int, note text, gone text);
INSERT INTO evolve SELECT i, i, 'note ' || i, 'gone ' || i FROM generate_series(1, 100) i;

CREATE TABLE big_txn (id int PRIMARY KEY, part text, pad text);

CREATE TABLE prepared_rows (id int PRIMARY KEY, what text);

CREATE TABLE log_no_key (at int, msg text); -- no replica identity: inserts only
ALTER TABLE log_no_key REPLICA IDENTITY NOTHING;
