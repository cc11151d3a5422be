-- What the publication published of each copied table when it was copied: its
-- row filter and, for a partitioned table published through its root, its
-- partitions (source.PublishedTable.Shape). A start compares it with what the
-- publication publishes now: rows the copy took under another definition do
-- not match it, and no change in the stream repairs that.
ALTER TABLE pgrelay.table_state ADD COLUMN IF NOT EXISTS published_as text;
