-- What the last migrate that caught up left for a switch, per slot (pgrelay
-- status reads it): the PGRELAY_SCHEMA it ran with, the source position it
-- caught up to, the tables and rows copied, the sequences set, and what
-- became of each schema object that goes with the tables (a JSON array of
-- {kind, name, state, reason, incomplete}).
CREATE TABLE IF NOT EXISTS pgrelay.cutover (
    slot          text PRIMARY KEY,
    schema_mode   text NOT NULL,
    caught_up_lsn pg_lsn NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    tables        integer NOT NULL,
    rows          bigint NOT NULL,
    sequences     integer NOT NULL,
    objects       jsonb NOT NULL DEFAULT '[]'
);
