-- REPLICA IDENTITY FULL with duplicate rows and NULLs; primary-key changes.
UPDATE full_rows SET c = 2 WHERE ctid = (SELECT min(ctid) FROM full_rows WHERE a = 1);  -- one of three duplicates
UPDATE full_rows SET b = 'was null' WHERE a IS NULL AND ctid = (SELECT max(ctid) FROM full_rows WHERE a IS NULL);
DELETE FROM full_rows WHERE ctid = (SELECT max(ctid) FROM full_rows WHERE a = 1 AND c = 1);  -- one of the two left
UPDATE full_rows SET b = 'two' WHERE a = 2;  -- NULL b and c in the old values
DELETE FROM full_rows WHERE a = 3;           -- NaN in the old values
INSERT INTO full_rows VALUES (4, 'four', 4), (4, 'four', 4);
UPDATE full_rows SET a = 5 WHERE a = 4;      -- two identical rows, two updates
BEGIN;
UPDATE items SET id = id + 5000 WHERE id BETWEEN 21 AND 30;    -- key change
UPDATE items SET id = 21 WHERE id = 5021;                      -- and back, in the same transaction
UPDATE items SET id = -id WHERE id BETWEEN 40 AND 45;
COMMIT;
UPDATE items SET id = id + 100000 WHERE id > 300;                -- many key changes in one statement
