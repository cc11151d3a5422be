-- The snapshot (txid_current_snapshot() text) a table's redone copy was taken
-- under, next to its LSN: a transaction prepared before that LSN and committed
-- after it is not in the copy, and only its transaction id tells.
ALTER TABLE pgrelay.table_state ADD COLUMN sync_snapshot text;
