package source

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Sequence is a sequence behind a column of a published table: a serial
// column's (owned by it), an identity column's, or one a column's default
// takes values from without owning it (DEFAULT nextval('s'), as pg_dump
// writes a serial of another tool, or one sequence shared by several
// tables). pgoutput carries no sequence changes; a migration sets them on
// the target at the end.
type Sequence struct {
	Schema, Name string // the sequence
	// Table and Column are the column it belongs to; both "" for a
	// sequence of its own (Standalone).
	TableSchema, Table, Column string
	Identity                   bool // an identity column's sequence, else owned (serial)
	// Unowned is true when the column's default uses the sequence without
	// owning it: the target's sequence is not made OWNED BY the column.
	Unowned bool
	// Standalone is true for a sequence no published column uses, read
	// from the schemas asked for (ReadSequencesIn): the application may
	// call it itself. Table and Column are then "".
	Standalone bool
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
	return ReadSequencesIn(ctx, conn, publication, nil)
}

// ReadSequencesIn is ReadSequences plus every other sequence of schemas
// (Standalone), except one owned by a column of a table publication does not
// publish, which goes with that table.
func ReadSequencesIn(ctx context.Context, conn *pgx.Conn, publication string, schemas []string) ([]Sequence, error) {
	out, err := readOwnedSequences(ctx, conn, publication)
	if err != nil {
		return nil, err
	}
	more, err := readDefaultSequences(ctx, conn, publication, schemas)
	if err != nil {
		return nil, err
	}
	// A column's own sequence is listed once, as its owner's.
	type use struct{ seqSchema, seq, schema, table, column string }
	seen := map[use]bool{}
	for _, q := range out {
		seen[use{q.Schema, q.Name, q.TableSchema, q.Table, q.Column}] = true
	}
	for _, q := range more {
		if !seen[use{q.Schema, q.Name, q.TableSchema, q.Table, q.Column}] {
			out = append(out, q)
		}
	}
	if len(more) > 0 {
		slices.SortStableFunc(out, func(a, b Sequence) int {
			return cmp.Or(cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Name, b.Name),
				cmp.Compare(a.TableSchema, b.TableSchema), cmp.Compare(a.Table, b.Table), cmp.Compare(a.Column, b.Column))
		})
	}
	if err := readSequenceValues(ctx, conn, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readOwnedSequences reads the serial and identity sequences of the
// published tables' columns (their own or their ancestors'), without values.
func readOwnedSequences(ctx context.Context, conn *pgx.Conn, publication string) ([]Sequence, error) {
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
	return out, nil
}

// sequenceColumns are the columns of pg_sequence and the privilege check
// that follow the column facts in the sequence queries.
const sequenceColumns = `pg_catalog.format_type(sq.seqtypid, NULL), sq.seqstart, sq.seqincrement, sq.seqmin, sq.seqmax, sq.seqcache, sq.seqcycle,
       pg_catalog.has_sequence_privilege(s.oid, 'SELECT')`

// readDefaultSequences reads the sequences the published tables' column
// defaults use without owning them (a dependency of the default on the
// sequence: nextval('s'), also inside a larger expression), and, with
// schemas, every other sequence of those schemas that no column of an
// unpublished table owns. Without values.
func readDefaultSequences(ctx context.Context, conn *pgx.Conn, publication string, schemas []string) ([]Sequence, error) {
	// The default is nextval() of the sequence itself when it prints as
	// that call and nothing else (an implicit cast to the column's type is
	// not printed; the source's sessions have an empty search_path, so the
	// name is qualified alike in both).
	rows, err := conn.Query(ctx, `
WITH pub AS (
	SELECT t.oid AS relid, tn.nspname::text AS nsp, t.relname::text AS rel
	FROM pg_catalog.pg_publication_tables pt
	JOIN pg_catalog.pg_namespace tn ON tn.nspname = pt.schemaname
	JOIN pg_catalog.pg_class t ON t.relnamespace = tn.oid AND t.relname = pt.tablename
	WHERE pt.pubname = $1
), used AS (
	SELECT sn.nspname::text AS seqschema, s.relname::text AS seq, p.nsp, p.rel, a.attname::text AS col,
	       pg_catalog.strpos(ad.adbin::text, '{VAR ') = 0 AND pg_catalog.pg_get_expr(ad.adbin, 0) =
	           'nextval(' || pg_catalog.quote_literal(s.oid::pg_catalog.regclass::text) || '::regclass)' AS nextval, s.oid AS seqid
	FROM pub p
	JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = p.relid
	JOIN pg_catalog.pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum AND NOT a.attisdropped
	JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid = ad.oid
		AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
	JOIN pg_catalog.pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
	JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
), standalone AS (
	SELECT sn.nspname::text, s.relname::text, '', '', '', false, s.oid
	FROM pg_catalog.pg_class s
	JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
	WHERE s.relkind = 'S' AND sn.nspname = ANY ($2::pg_catalog.text[])
	AND s.oid NOT IN (SELECT seqid FROM used)
	-- owned by a column: listed with it when its table is published, else
	-- it goes with that table
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend o
		WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objid = s.oid
		AND o.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.deptype IN ('a', 'i'))
	-- not an extension's
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e
		WHERE e.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND e.objid = s.oid AND e.deptype = 'e')
)
SELECT u.seqschema, u.seq, u.nsp, u.rel, u.col, u.nextval, u.nsp = '', `+sequenceColumns+`
FROM (SELECT * FROM used UNION ALL SELECT * FROM standalone) u
JOIN pg_catalog.pg_class s ON s.oid = u.seqid
JOIN pg_catalog.pg_sequence sq ON sq.seqrelid = s.oid
ORDER BY 1, 2, 3, 4, 5`, publication, schemas)
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences the defaults of publication %q use: %w", publication, err)
	}
	var out []Sequence
	var q Sequence
	_, err = pgx.ForEachRow(rows, []any{&q.Schema, &q.Name, &q.TableSchema, &q.Table, &q.Column, &q.Nextval, &q.Standalone,
		&q.TypeName, &q.Start, &q.Increment, &q.Min, &q.Max, &q.Cache, &q.Cycle, &q.Readable}, func() error {
		q.Unowned = !q.Standalone
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("source: read the sequences the defaults of publication %q use: %w", publication, err)
	}
	return out, nil
}

// readSequenceValues reads the value of each readable sequence of seqs,
// which are ordered by sequence.
func readSequenceValues(ctx context.Context, conn *pgx.Conn, out []Sequence) error {
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
			return err
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].Readable && sameAsPrevious(i) {
			out[i].LastValue, out[i].Called = out[i-1].LastValue, out[i-1].Called
		}
	}
	return nil
}
