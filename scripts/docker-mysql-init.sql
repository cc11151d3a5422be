-- Run once by docker-compose.yml's MySQL 8.4 when it creates its data
-- directory (/docker-entrypoint-initdb.d): what pgrelay needs of its user
-- beyond the database the image creates for it.
--   XA_RECOVER_ADMIN: prepared source transactions are applied as XA
--     transactions, found again after a restart with XA RECOVER.
--   CREATE, ALTER, DROP, INDEX and the row privileges on every database:
--     each source schema other than public lands in a database of its name.
GRANT XA_RECOVER_ADMIN ON *.* TO 'pgrelay'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, INDEX ON *.* TO 'pgrelay'@'%';
