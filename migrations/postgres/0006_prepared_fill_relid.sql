-- The source table's OID for each deferred fill: by COMMIT PREPARED's turn the
-- table may have been renamed on the source, and its fill values are looked up
-- by OID. NULL in rows written before this version: those are looked up by name.
ALTER TABLE pgrelay.prepared_fill ADD COLUMN IF NOT EXISTS source_relid oid;
