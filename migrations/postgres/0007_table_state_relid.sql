-- The source table's OID for each copied table: changes the stream carries
-- from before a table's own copy snapshot (sync_lsn) are skipped for that
-- table, found by OID: by then it may have been renamed on the source, and its
-- Relation message carry the older name, or another table hold its name.
-- NULL in rows written before this version: those are found by name.
ALTER TABLE pgrelay.table_state ADD COLUMN IF NOT EXISTS relation_oid oid;
