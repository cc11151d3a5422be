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
	// Nextval is true when the column's default is nextval() of it.
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
SELECT sn.nspname::text, s.relname::text, tn.nspname::text, t.relname::text, a.attname::text, d.deptype = 'i',
       coalesce(CASE WHEN pg_catalog.strpos(ad.adbin::text, '{VAR ') = 0 THEN pg_catalog.pg_get_expr(ad.adbin, 0) END LIKE 'nextval(%', false),
       pg_catalog.format_type(sq.seqtypid, NULL), sq.seqstart, sq.seqincrement, sq.seqmin, sq.seqmax, sq.seqcache, sq.seqcycle,
       pg_catalog.has_sequence_privilege(s.oid, 'SELECT')
FROM pg_catalog.pg_publication_tables pt
JOIN pg_catalog.pg_namespace tn ON tn.nspname = pt.schemaname
JOIN pg_catalog.pg_class t ON t.relnamespace = tn.oid AND t.relname = pt.tablename
JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid = t.oid
	AND d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
JOIN pg_catalog.pg_sequence sq ON sq.seqrelid = s.oid
JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = t.oid AND ad.adnum = a.attnum
WHERE pt.pubname = $1
ORDER BY 1, 2`, publication)
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences of publication %q: %w", publication, err)
	}
	var out []Sequence
	var q Sequence
	_, err = pgx.ForEachRow(rows, []any{&q.Schema, &q.Name, &q.TableSchema, &q.Table, &q.Column, &q.Identity, &q.Nextval,
		&q.TypeName, &q.Start, &q.Increment, &q.Min, &q.Max, &q.Cache, &q.Cycle, &q.Readable}, func() error {
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences of publication %q: %w", publication, err)
	}
	var batch pgx.Batch
	for i := range out {
		if !out[i].Readable {
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
	return out, nil
}
