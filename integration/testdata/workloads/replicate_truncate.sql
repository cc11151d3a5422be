TRUNCATE trunc_me;
INSERT INTO trunc_me VALUES (1, 'after truncate');
BEGIN;
INSERT INTO trunc_ref VALUES (1000, 'before');
TRUNCATE trunc_ref, trunc_me;
INSERT INTO trunc_ref VALUES (1, 'after');
COMMIT;
