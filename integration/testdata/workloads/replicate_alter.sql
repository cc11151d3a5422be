-- Schema changes mid-stream: each is followed by DML, so a new Relation
-- message reaches pgrelay.
ALTER TABLE evolve ADD COLUMN status text NOT NULL DEFAULT 'active';
ALTER TABLE evolve ADD COLUMN score int DEFAULT 7;
INSERT INTO evolve (id, qty, note, gone, status) VALUES (101, 101, 'new', 'x', 'fresh');
UPDATE evolve SET score = 1 WHERE id = 2;
ALTER TABLE evolve DROP COLUMN gone;
INSERT INTO evolve (id, qty, note) VALUES (102, 102, 'after drop');
UPDATE evolve SET note = 'updated after drop' WHERE id = 3;
ALTER TABLE evolve ALTER COLUMN qty TYPE bigint;
UPDATE evolve SET qty = 9000000000 WHERE id = 4;
INSERT INTO evolve (id, qty, note) VALUES (103, 1 + 2^40, 'big qty');
ALTER TABLE evolve ALTER COLUMN note TYPE varchar(100);
DELETE FROM evolve WHERE id = 5;
INSERT INTO evolve (id, qty, note, status, score) VALUES (104, 1, 'last', 'done', NULL);
