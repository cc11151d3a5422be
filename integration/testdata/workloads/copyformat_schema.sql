-- Source schema and rows for the snapshot copy format test: a table of every
-- kind of type that goes in COPY binary format (with typmods, arrays, NULLs
-- and edge values), intervals (binary only into a target that knows every
-- interval the source may hold), user types (text), and three tables the test
-- creates on the target beforehand: two with other column types (text), one
-- with the same types in another column order (binary).
CREATE TABLE bin_types (
    id       int8 PRIMARY KEY,
    b        bool,
    raw      bytea,
    ch       "char",
    nm       name,
    i2       int2,
    i4       int4,
    txt      text,
    o        oid,
    js       json,
    f4       float4,
    f8       float8,
    m        money,
    mac      macaddr,
    mac8     macaddr8,
    ip       inet,
    net      cidr,
    fixed    char(12),
    vc       varchar(20),
    d        date,
    tm       time(3),
    tmz      timetz,
    ts       timestamp(3),
    tstz     timestamptz,
    bits     bit(5),
    vbits    varbit(10),
    num      numeric(10,2),
    num_free numeric,
    u        uuid,
    lsn      pg_lsn,
    jb       jsonb,
    ints     int4[],
    i8s      int8[],
    words    text[],
    nums     numeric(10,2)[],
    stamps   timestamptz[],
    chars    char(3)[],
    jbs      jsonb[],
    raws     bytea[],
    flags    bool[],
    grid     int2[],
    days     date[],
    names    name[],
    nets     inet[],
    big      text
);

INSERT INTO bin_types
SELECT i,
       CASE WHEN i % 7 <> 0 THEN i % 2 = 0 END,
       CASE WHEN i % 11 <> 0 THEN decode(md5(i::text), 'hex') || '\x005c0a0d09'::bytea END,
       CASE WHEN i % 13 <> 0 THEN chr(65 + i % 26)::"char" END,
       ('name_' || i)::name,
       (i % 32000 - 16000)::int2,
       i * 7919 - 1000000,
       CASE WHEN i % 5 <> 0 THEN 'row ' || i || E'\ttab\nnewline \\ backslash ünïcødé 🐘 ''quote''' END,
       i::oid,
       json_build_object('i', i, 'pad', ' spaced  ', 'nested', json_build_array(1, 'two', NULL)),
       (i / 7.0)::float4,
       i / 3.0 + 0.000001,
       (i * 1.25 - 100)::numeric::money,
       ('08:00:2b:01:02:' || lpad(to_hex(i % 256), 2, '0'))::macaddr,
       ('08:00:2b:ff:fe:01:02:' || lpad(to_hex(i % 256), 2, '0'))::macaddr8,
       CASE WHEN i % 3 = 0 THEN ('2001:db8::' || to_hex(i) || '/' || (64 + i % 65))::inet
            ELSE ('10.' || (i % 256) || '.0.1/' || (8 + i % 25))::inet END,
       ('10.' || (i % 256) || '.0.0/16')::cidr,
       CASE WHEN i % 4 <> 0 THEN 'c' || i END,
       'v' || i,
       date '2000-01-01' + i,
       time '00:00:00.123' + i * interval '1.0015 seconds',
       timetz '12:34:56.789+05:30' + i * interval '1 minute',
       timestamp '1999-12-31 23:59:59.999' + i * interval '61.0015 seconds',
       timestamptz '2024-02-29 12:34:56.789012+05:30' + i * interval '1 hour 0.000001 seconds',
       (i % 32)::bit(5),
       substring((i % 1024)::bit(10) from 1 for 1 + i % 10)::varbit(10),
       CASE WHEN i % 9 <> 0 THEN round((i * 3.14159)::numeric, 3) END,
       i::numeric / 7,
       md5('u' || i)::uuid,
       (to_hex(i) || '/' || to_hex(i * 65537))::pg_lsn,
       jsonb_build_object('id', i, 'tags', jsonb_build_array('a', i, NULL), 'esc', E'q"\\\n\u00e9', 'num', i * 1.5),
       ARRAY[i, NULL, -i],
       ARRAY[i::int8 * 1000000007, NULL],
       ARRAY['a b', 'c,d', E'e"f', NULL, 'g\h', ''],
       ARRAY[round(i / 3.0, 3), NULL, -0.5]::numeric(10,2)[],
       ARRAY[timestamptz '2024-02-29 12:34:56.789012+05:30' + i * interval '1 day', NULL, 'infinity'],
       ARRAY['a', 'bc', NULL]::char(3)[],
       ARRAY[jsonb_build_object('a', i), 'null', NULL],
       ARRAY['\x00ff'::bytea, NULL, ''::bytea],
       ARRAY[true, NULL, false],
       ('[0:1][1:2]={{' || i % 100 || ',2},{3,NULL}}')::int2[],
       ARRAY[date '2000-01-01' - i, NULL, 'infinity'],
       ARRAY['n1', 'N 2']::name[],
       ARRAY['192.168.0.1/24'::inet, '::1'],
       CASE WHEN i % 500 = 0 THEN (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 400) g) END
FROM generate_series(1, 3000) i;

-- A row of NULLs, and edge values.
INSERT INTO bin_types (id) VALUES (1000001);
INSERT INTO bin_types (id, b, raw, ch, nm, i2, i4, txt, o, js, f4, f8, m, mac, mac8, ip, net, fixed, vc, d, tm, tmz, ts, tstz,
                       bits, vbits, num, num_free, u, lsn, jb, ints, i8s, words, nums, stamps, chars, jbs, raws, flags, grid, days, names, nets) VALUES
 (1000002, false, '\x', '~', '', -32768, -2147483648, '', 4294967295, '"str"', 'NaN', '-Infinity', '-92233720368547758.08',
  '00:00:00:00:00:00', 'ff:ff:ff:ff:ff:ff:ff:ff', '::ffff:1.2.3.4/128', '0.0.0.0/0', '', '', '-infinity', '24:00:00', '00:00:00+15:59',
  '-infinity', 'infinity', B'00000', B'', -99999999.99, 'NaN', '00000000-0000-0000-0000-000000000000', '0/0', '[]',
  '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}'),
 (1000003, true, '\x5c4e', E'\\', repeat('n', 63), 32767, 2147483647, E'\\N', 0, '[1, "two", {"three": [3]}]', '-0', 5e-324,
  '92233720368547758.07', 'ff:ff:ff:ff:ff:ff', '00:00:00:00:00:00:00:00', '2001:db8::/32', '2001:db8::/32', 'twelve chars', repeat('€', 20),
  'infinity', '00:00:00', '23:59:59.999999-15:59', 'infinity', '-infinity', B'11111', B'1111111111', 99999999.99, 'Infinity',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', 'FFFFFFFF/FFFFFFFF', '{"": null, "a\"b": "\\n é"}',
  '{{1,2},{3,4}}', ARRAY[NULL]::int8[], ARRAY[NULL, NULL]::text[], '{-0.005,0.005}', ARRAY['-infinity']::timestamptz[],
  '{"   "}', ARRAY['{}']::jsonb[], ARRAY['\x']::bytea[], '{{t,f},{f,t}}', '[-5:-5]={7}', '{-infinity}', '{""}', '{::/0}'),
 (1000004, NULL, decode(repeat('00ff', 6000), 'hex'), NULL, NULL, 0, 0, repeat('ü', 5000), NULL, 'null', 1.17549435e-38, -1e-300,
  0, NULL, NULL, NULL, NULL, NULL, NULL, '4713-01-01 BC', NULL, NULL, '294276-12-31 23:59:59.999', '4713-01-01 00:00:00+00 BC',
  NULL, NULL, 0, '12345678901234567890.123456789012345678901234567890', NULL, NULL, '"a string"',
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

CREATE TABLE bin_span (
    id    int8 PRIMARY KEY,
    span  interval,
    ym    interval year to month,
    sec   interval second(2),
    spans interval[]
);
INSERT INTO bin_span
SELECT i,
       make_interval(years => i % 3, months => i % 12, days => i, secs => i / 7.0),
       make_interval(years => i, months => i % 12),
       make_interval(secs => i / 3.0),
       ARRAY[make_interval(days => i), NULL, make_interval(hours => -i)]
FROM generate_series(1, 500) i;
INSERT INTO bin_span VALUES (1000, '-178000000 years', '178000000 years', '-0.01', '{}'), (1001, NULL, NULL, NULL, NULL);

CREATE TYPE bin_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN bin_posint AS int CHECK (VALUE > 0);
CREATE TABLE bin_user (
    id    int8 PRIMARY KEY,
    mood  bin_mood,
    pos   bin_posint,
    moods bin_mood[],
    note  text
);
INSERT INTO bin_user
SELECT i, (ARRAY['sad', 'ok', 'happy'])[1 + i % 3]::bin_mood, i, ARRAY['ok', NULL]::bin_mood[], 'n' || i
FROM generate_series(1, 500) i;

-- The target has small int8: int4 data read as int8 fails loudly.
CREATE TABLE bin_widened (
    id    int8 PRIMARY KEY,
    small int4,
    label varchar(10)
);
INSERT INTO bin_widened
SELECT i, CASE WHEN i % 10 <> 0 THEN i * 3 - 500 END, 'w' || i
FROM generate_series(1, 500) i;

-- The target has big float8 and label text: int8 data read as float8 loads
-- without an error, as tiny fractions.
CREATE TABLE bin_retyped (
    id    int8 PRIMARY KEY,
    big   int8,
    label varchar(10)
);
INSERT INTO bin_retyped
SELECT i, CASE WHEN i % 10 <> 0 THEN i * 1000003 END, 'r' || i
FROM generate_series(1, 500) i;

-- The target has the same columns and types, in another order.
CREATE TABLE bin_reordered (
    id    int8 PRIMARY KEY,
    small int4,
    label varchar(10)
);
INSERT INTO bin_reordered SELECT i, -i, 'r' || i FROM generate_series(1, 500) i;

ANALYZE;
