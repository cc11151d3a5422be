-- The source table each stored definition belongs to: its OID (pg_class) and the
-- slot that replicates it (OIDs are only unique within one source database, and
-- each source has its own slot). A table renamed or moved to another schema on
-- the source while pgrelay was stopped is found again by its OID, so its target
-- table is renamed rather than created anew.
ALTER TABLE pgrelay.relation ADD COLUMN slot text, ADD COLUMN relation_oid oid;
-- Definitions stored before: the OID is in the definition; the slot is known when
-- the target serves one slot only.
UPDATE pgrelay.relation
SET slot = (SELECT slot FROM pgrelay.seed UNION SELECT slot FROM pgrelay.progress LIMIT 1),
    relation_oid = nullif(definition->>'RelationID', '0')::oid
WHERE (SELECT count(*) FROM (SELECT slot FROM pgrelay.seed UNION SELECT slot FROM pgrelay.progress) s) = 1;
CREATE INDEX relation_oid_idx ON pgrelay.relation (slot, relation_oid);
