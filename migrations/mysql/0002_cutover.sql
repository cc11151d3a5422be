-- What the last migrate that caught up left for a switch, per slot (pgrelay
-- status reads it): the PGRELAY_SCHEMA it ran with, the source position it
-- caught up to, the tables and rows copied, the sequences set, and what
-- became of each schema object that goes with the tables (a JSON array of
-- {kind, name, state, reason, incomplete}).
CREATE TABLE IF NOT EXISTS pgrelay_cutover (
    slot          VARCHAR(64) NOT NULL PRIMARY KEY,
    schema_mode   VARCHAR(16) NOT NULL,
    caught_up_lsn BIGINT UNSIGNED NOT NULL,
    finished_at   DATETIME(6) NOT NULL,
    tables        INT NOT NULL,
    row_count     BIGINT NOT NULL,
    sequences     INT NOT NULL,
    objects       LONGTEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
