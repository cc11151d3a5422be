-- Updates that leave the TOASTed body unchanged (pgoutput sends it as 'u'),
-- and one that changes it.
UPDATE docs SET small = small + 100 WHERE id % 2 = 0;
UPDATE docs SET title = 'retitled ' || id WHERE id <= 5;
UPDATE docs SET body = body || 'appended' WHERE id = 7;
UPDATE docs SET id = id + 100 WHERE id = 9;  -- key change with an unchanged TOASTed column
DELETE FROM docs WHERE id = 11;
