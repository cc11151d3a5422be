-- A transaction far past logical_decoding_work_mem (64kB), so the source
-- streams it, with a subtransaction rolled back in the middle.
BEGIN;
INSERT INTO big_txn SELECT i, 'kept-1', repeat('x', 100) FROM generate_series(1, 8000) i;
SAVEPOINT s1;
INSERT INTO big_txn SELECT i, 'rolled-back', repeat('y', 100) FROM generate_series(8001, 14000) i;
UPDATE big_txn SET part = 'rolled-back-update' WHERE id <= 1000;
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
INSERT INTO big_txn SELECT i, 'kept-2', repeat('z', 100) FROM generate_series(14001, 20000) i;
RELEASE SAVEPOINT s2;
UPDATE big_txn SET pad = 'updated' WHERE id % 100 = 0;
DELETE FROM big_txn WHERE id % 333 = 0;
COMMIT;
