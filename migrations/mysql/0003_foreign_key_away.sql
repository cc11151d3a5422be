-- The foreign keys pgrelay took off the target for a change of a table
-- (MySQL refuses to drop or retype a column a foreign key holds): each is
-- recorded before it is dropped and made again after the change, so that a
-- stop between the two makes it again on resume. constraint_schema,
-- constraint_name and table_name say where it was; definition is the key
-- after the change (JSON); reason, when not NULL, why it could not be made
-- again yet (it is tried again after the next change of its tables).
CREATE TABLE IF NOT EXISTS pgrelay_foreign_key_away (
    constraint_schema VARCHAR(64) NOT NULL,
    constraint_name   VARCHAR(64) NOT NULL,
    table_name        VARCHAR(64) NOT NULL,
    slot              VARCHAR(64) NULL,
    definition        LONGTEXT NOT NULL,
    reason            LONGTEXT NULL,
    updated_at        DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (constraint_schema, constraint_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
