-- Mixed DML in several transactions (each BEGIN … COMMIT block is one).
BEGIN;
INSERT INTO items SELECT i, 'item ' || i, i, NULL, 'blue', NULL FROM generate_series(201, 400) i;
UPDATE items SET price = price * 2, tags = tags || ARRAY['doubled'] WHERE id % 5 = 0;
DELETE FROM items WHERE id % 17 = 0;
COMMIT;
BEGIN;
INSERT INTO items VALUES (1000, E'tab\there\nnewline \\ 🐘', 0.01, '{}', NULL, '{"a": [1, {"b": null}]}', '2020-01-01 00:00:00+00');
UPDATE items SET name = 'renamed', meta = meta || '{"x": 1}' WHERE id = 1000;
DELETE FROM items WHERE id = 3;
INSERT INTO items VALUES (3, 'three again', 3, NULL, 'red', NULL, NULL);
COMMIT;
INSERT INTO log_no_key SELECT i, 'log ' || i FROM generate_series(1, 50) i;
INSERT INTO log_no_key VALUES (1, 'log 1'), (1, 'log 1'); -- duplicates stay duplicates
SELECT pg_logical_emit_message(false, 'e2e-test', 'non-transactional message');
BEGIN;
SELECT pg_logical_emit_message(true, 'e2e-test', 'transactional message');
UPDATE items SET color = 'green' WHERE id BETWEEN 10 AND 20;
SELECT pg_logical_emit_message(true, 'pgrelay.caught_up', 'not a token of pgrelay');
COMMIT;
