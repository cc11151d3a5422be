-- pgrelay metadata on a PostgreSQL target. Every name is schema-qualified: pgrelay
-- sessions run with search_path = pg_catalog, pg_temp.

CREATE SCHEMA IF NOT EXISTS pgrelay;

-- The position each slot has durably applied: every source transaction whose end
-- LSN is <= lsn is on the target. Updated in the same transaction as the rows.
CREATE TABLE pgrelay.progress (
    slot        text PRIMARY KEY,
    lsn         pg_lsn NOT NULL,
    commit_time timestamptz,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per transaction prepared on the target, inserted inside that prepared
-- transaction (never the shared progress row: a prepared transaction must not hold
-- a lock later transactions need). A committed row whose gid is no longer in
-- pg_prepared_xacts means the prepared transaction was committed.
CREATE TABLE pgrelay.prepared (
    slot        text NOT NULL,
    gid         text PRIMARY KEY,
    xid         bigint,
    prepare_lsn pg_lsn,
    end_lsn     pg_lsn NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX prepared_slot_idx ON pgrelay.prepared (slot);

-- Snapshot copy state per table.
CREATE TABLE pgrelay.table_state (
    slot       text NOT NULL,
    schema     text NOT NULL,
    name       text NOT NULL,
    state      text NOT NULL CHECK (state IN ('pending', 'copying', 'copied', 'indexed')),
    rows       bigint NOT NULL DEFAULT 0,
    bytes      bigint NOT NULL DEFAULT 0,
    -- the LSN of the snapshot this table was copied under, when a crash made
    -- pgrelay redo its copy under a later snapshot than the slot's
    sync_lsn   pg_lsn,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slot, schema, name)
);

-- The snapshot a slot was seeded from.
CREATE TABLE pgrelay.seed (
    slot             text PRIMARY KEY,
    consistent_point pg_lsn NOT NULL,
    snapshot_done    boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    done_at          timestamptz
);

-- The definition (pgrelay's table model, as JSON) each target table was last
-- created or altered to, written in the same transaction as the DDL. After a
-- restart the first Relation message of a table is compared with it, so a
-- column added or changed on the source while pgrelay was stopped still reaches
-- the target.
CREATE TABLE pgrelay.relation (
    schema     text NOT NULL,
    name       text NOT NULL,
    definition jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schema, name)
);
