package source

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Sequence is a sequence behind a column of a published table: a serial
// column's (owned by it) or an identity column's. pgoutput carries no
// sequence changes; a migration sets them on the target at the end.
type Sequence struct {
	Schema, Name string // the sequence
	// Table and Column are the column it belongs to.
	TableSchema, Table, Column string
	Identity                   bool // an identity column's sequence, else owned (serial)
	// Shared is true when the sequence is not the column's own but belongs
	// to the same column of an ancestor of its table: the partitioned
	// table of a partition published on its own (publish_via_partition_root
	// off), or an inheritance parent. Its partitions share it, and on the
	// target, where each is a table of its own, each column gets a default
	// of it (Nextval) without owning it; Identity is then false.
	Shared bool
	// Nextval is true when the column's default is nextval() of it (for a
	// Shared one: of it, or the column is an identity column of it).
	Nextval bool
	// TypeName, Start, Increment, Min, Max, Cache and Cycle are its
	// definition (pg_sequence).
	TypeName                          string
	Start, Increment, Min, Max, Cache int64
	Cycle                             bool
	// Readable is false when the role may not read its value (SELECT on
	// it); Called and LastValue are then unknown.
	Readable bool
	// LastValue and Called are its state as setval(LastValue, Called)
	// restores it: when Called, nextval returned LastValue last; when not
	// (never called, ALTER SEQUENCE … RESTART, setval(…, false)), the next
	// nextval returns LastValue.
	Called    bool
	LastValue int64
}

// ReadSequences lists the sequences of the columns of the tables in
// publication, with their current values. The values are read from each
// sequence itself: pg_sequences.last_value is NULL both when the role may not
// read it and when it is not called, and a sequence restarted at 100 is not
// one that starts at 1.
func ReadSequences(ctx context.Context, conn *pgx.Conn, publication string) ([]Sequence, error) {
	// pg_get_expr(…, 0): given the table's OID it would lock the table, and a
	// prepared transaction that altered or truncated it holds that lock until
	// COMMIT PREPARED. A default never names a column (checked: no Var).
	rows, err := conn.Query(ctx, `
WITH RECURSIVE pub AS (
	SELECT t.oid AS relid, tn.nspname::text AS nsp, t.relname::text AS rel
	FROM pg_catalog.pg_publication_tables pt
	JOIN pg_catalog.pg_namespace tn ON tn.nspname = pt.schemaname
	JOIN pg_catalog.pg_class t ON t.relnamespace = tn.oid AND t.relname = pt.tablename
	WHERE pt.pubname = $1
), owner (relid, ownerid) AS (
	-- each published table, and its ancestors: a partition's serial or
	-- identity column takes its values from the partitioned table's sequence
	SELECT relid, relid FROM pub
	UNION
	SELECT o.relid, i.inhparent FROM owner o JOIN pg_catalog.pg_inherits i ON i.inhrelid = o.ownerid
)
SELECT sn.nspname::text, s.relname::text, p.nsp, p.rel, a.attname::text,
       d.deptype = 'i' AND o.ownerid = o.relid, o.ownerid <> o.relid,
       CASE WHEN o.ownerid = o.relid
            THEN coalesce(CASE WHEN pg_catalog.strpos(ad.adbin::text, '{VAR ') = 0 THEN pg_catalog.pg_get_expr(ad.adbin, 0) END LIKE 'nextval(%', false)
            ELSE a.attidentity <> '' OR EXISTS (SELECT FROM pg_catalog.pg_depend dd
                WHERE dd.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dd.objid = ad.oid
                AND dd.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dd.refobjid = s.oid) END,
       pg_catalog.format_type(sq.seqtypid, NULL), sq.seqstart, sq.seqincrement, sq.seqmin, sq.seqmax, sq.seqcache, sq.seqcycle,
       pg_catalog.has_sequence_privilege(s.oid, 'SELECT')
FROM owner o
JOIN pub p ON p.relid = o.relid
JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid = o.ownerid
	AND d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
JOIN pg_catalog.pg_sequence sq ON sq.seqrelid = s.oid
JOIN pg_catalog.pg_attribute oa ON oa.attrelid = o.ownerid AND oa.attnum = d.refobjsubid
JOIN pg_catalog.pg_attribute a ON a.attrelid = o.relid AND a.attname = oa.attname AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = o.relid AND ad.adnum = a.attnum
ORDER BY 1, 2, 3, 4`, publication)
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences of publication %q: %w", publication, err)
	}
	var out []Sequence
	var q Sequence
	_, err = pgx.ForEachRow(rows, []any{&q.Schema, &q.Name, &q.TableSchema, &q.Table, &q.Column, &q.Identity, &q.Shared, &q.Nextval,
		&q.TypeName, &q.Start, &q.Increment, &q.Min, &q.Max, &q.Cache, &q.Cycle, &q.Readable}, func() error {
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences of publication %q: %w", publication, err)
	}
	// A sequence shared by partitions is read once: its rows are together.
	sameAsPrevious := func(i int) bool {
		return i > 0 && out[i].Schema == out[i-1].Schema && out[i].Name == out[i-1].Name
	}
	var batch pgx.Batch
	for i := range out {
		if !out[i].Readable || sameAsPrevious(i) {
			continue
		}
		q := &out[i]
		batch.Queue("SELECT last_value, is_called FROM " + pgx.Identifier{q.Schema, q.Name}.Sanitize()).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&q.LastValue, &q.Called); err != nil {
				return fmt.Errorf("source: read sequence %s.%s: %w", q.Schema, q.Name, err)
			}
			return nil
		})
	}
	if batch.Len() > 0 {
		if err := conn.SendBatch(ctx, &batch).Close(); err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].Readable && sameAsPrevious(i) {
			out[i].LastValue, out[i].Called = out[i-1].LastValue, out[i-1].Called
		}
	}
	return out, nil
}
