-- Changes after a first migrate: the second migrate catches them up.
UPDATE types_all SET txt = txt || E' updated\t\\', f8 = f8 * 2, mood = 'ok', doc = doc || '{"updated": true}' WHERE id % 7 = 0;
UPDATE types_all SET i2 = i2 + 1 WHERE id % 50 = 0;             -- leaves the TOASTed big column unchanged
UPDATE types_all SET big = big || 'more' WHERE id = 100;
UPDATE types_all SET sparse = NULL WHERE sparse IS NOT NULL AND id % 20 = 0;
UPDATE types_all SET id = id + 10000 WHERE id BETWEEN 11 AND 20;  -- key change
DELETE FROM types_all WHERE id % 13 = 0;
INSERT INTO types_all (id, i4, txt, pair, ints, big)
SELECT 2000 + i, i, E'new\n' || i, ROW('new', i)::e2e_pair, ARRAY[i], CASE WHEN i = 5 THEN repeat(md5(i::text), 500) END
FROM generate_series(1, 100) i;
UPDATE "E2e App"."Order Lines" SET "Note" = 'changed' WHERE "Line" = 3;
DELETE FROM "E2e App"."Order Lines" WHERE "Line" = 4;
UPDATE full_ident SET b = 'x2' WHERE a = 1;                      -- both duplicates
DELETE FROM full_ident WHERE ctid = (SELECT min(ctid) FROM full_ident WHERE a IS NULL); -- one of two NULL rows
UPDATE full_ident SET c = 9 WHERE a = 2;
UPDATE index_ident SET region = region + 10 WHERE qty % 4 = 0;   -- identity key change
DELETE FROM index_ident WHERE qty % 9 = 0;
UPDATE child SET parent_id = 2 WHERE id % 11 = 0;
DELETE FROM child WHERE parent_id = 50;
DELETE FROM parent WHERE id = 50;
