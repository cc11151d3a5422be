-- Columns a prepared transaction added whose fill value (what rows older than
-- the ADD COLUMN hold: the source's pg_attribute.attmissingval) the source
-- catalog shows only once that transaction commits. A row is inserted inside the
-- prepared transaction, right after the ADD COLUMN, so it becomes visible exactly
-- when COMMIT PREPARED commits the column; its xmin and cmin then tell the target
-- rows written before the column existed. The COMMIT PREPARED bookkeeping fills
-- those rows and deletes the row, in one transaction.
CREATE TABLE pgrelay.prepared_fill (
    gid           text NOT NULL,
    target_schema text NOT NULL,
    target_table  text NOT NULL,
    column_name   text NOT NULL,
    source_schema text NOT NULL,
    source_table  text NOT NULL,
    PRIMARY KEY (gid, target_schema, target_table, column_name)
);
