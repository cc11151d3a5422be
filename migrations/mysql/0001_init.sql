-- pgrelay metadata on a MySQL or MariaDB target: tables in the target URL's
-- database, named pgrelay_*. MySQL commits each statement on its own, so every
-- statement here can run again after a crash half-way through the file.

-- The position each slot has durably applied: every source transaction whose
-- end LSN is <= lsn is on the target. Updated in the same transaction as the rows.
CREATE TABLE IF NOT EXISTS pgrelay_progress (
    slot        VARCHAR(64) NOT NULL PRIMARY KEY,
    lsn         BIGINT UNSIGNED NOT NULL,
    commit_time DATETIME(6) NULL,
    updated_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per transaction prepared on the target (XA PREPARE), inserted inside
-- that transaction (never the shared progress row: a prepared transaction must
-- not hold a lock later transactions need). A committed row whose xid is no
-- longer in XA RECOVER means the prepared transaction was committed.
CREATE TABLE IF NOT EXISTS pgrelay_prepared (
    slot        VARCHAR(64) NOT NULL,
    gid         VARCHAR(200) NOT NULL PRIMARY KEY,
    xa_xid      VARCHAR(200) NOT NULL,
    prepare_lsn BIGINT UNSIGNED NULL,
    end_lsn     BIGINT UNSIGNED NOT NULL,
    created_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    KEY pgrelay_prepared_slot (slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Snapshot copy state per table (source schema and name).
CREATE TABLE IF NOT EXISTS pgrelay_table_state (
    slot          VARCHAR(64) NOT NULL,
    source_schema VARCHAR(64) NOT NULL,
    source_name   VARCHAR(64) NOT NULL,
    state         VARCHAR(16) NOT NULL,
    row_count     BIGINT NOT NULL DEFAULT 0,
    byte_count    BIGINT NOT NULL DEFAULT 0,
    sync_lsn      BIGINT UNSIGNED NULL,
    sync_snapshot LONGTEXT NULL,
    published_as  LONGTEXT NULL,
    relation_oid  BIGINT UNSIGNED NULL,
    updated_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (slot, source_schema, source_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The snapshot a slot was seeded from.
CREATE TABLE IF NOT EXISTS pgrelay_seed (
    slot             VARCHAR(64) NOT NULL PRIMARY KEY,
    consistent_point BIGINT UNSIGNED NOT NULL,
    snapshot_done    TINYINT(1) NOT NULL DEFAULT 0,
    created_at       DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    done_at          DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The definition (pgrelay's table model, as JSON) each target table was last
-- brought to. A change of a table is several DDL statements, each committed on
-- its own: pending holds the definition being applied and pending_step how many
-- of its steps have run, so a change interrupted by a crash resumes where it
-- stopped instead of running a step twice.
CREATE TABLE IF NOT EXISTS pgrelay_relation (
    target_schema VARCHAR(64) NOT NULL,
    target_name   VARCHAR(64) NOT NULL,
    definition    LONGTEXT NOT NULL,
    slot          VARCHAR(64) NULL,
    relation_oid  BIGINT UNSIGNED NULL,
    pending       LONGTEXT NULL,
    pending_step  INT NOT NULL DEFAULT 0,
    updated_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (target_schema, target_name),
    KEY pgrelay_relation_oid (slot, relation_oid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
