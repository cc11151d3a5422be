package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
)

// A column the source dropped or retyped may have, on the target, objects
// that a migration made there depending on it: views and materialized views
// that read it (PostgreSQL refuses the change under them), foreign keys that
// reference a dropped column or a primary key that goes. On the source they
// were dropped first (or made anew), which pgoutput does not carry. So the
// sink drops them before the change, in its transaction, and makes them
// again after it from the target's own definitions (with their comments,
// grants, triggers and indexes), each in a block of its own: one that cannot
// be made again (it read the dropped column) is listed as left out in the
// last migration's report, which status shows, and the next pgrelay migrate
// makes it as the source has it then.

// inTheWay are the objects of the target a column change must drop first.
type inTheWay struct {
	drop    []string    // in order
	restore []madeAgain // in order, after the change
	names   []string    // for the log
}

// madeAgain is one object dropped for a change, and what makes it again.
type madeAgain struct {
	kind  schema.ObjectKind
	name  string // schema.name, or "constraint on schema.table"
	stmts []string
}

// block is the DO block that makes each of w's objects again after the
// change of table, each in a block of its own (a subtransaction): one that
// fails is added to the last migration's report of slot as left out, with
// the target's error.
func (w *inTheWay) block(slot, table string) string {
	var b strings.Builder
	b.WriteString("BEGIN\n")
	for _, m := range w.restore {
		b.WriteString("\tBEGIN\n")
		for _, stmt := range m.stmts {
			b.WriteString("\t\tEXECUTE " + pgquote.Literal(stmt) + ";\n")
		}
		b.WriteString("\tEXCEPTION WHEN OTHERS THEN\n")
		if slot == "" {
			b.WriteString("\t\tNULL;\n")
		} else {
			reason := "the source's change of " + table + " needed it out of the way on the target; made again from the target's definition, it failed: "
			fmt.Fprintf(&b, "\t\tUPDATE pgrelay.cutover SET objects = objects || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object("+
				"'kind', %s, 'name', %s, 'state', 'left out', 'reason', %s || SQLERRM || %s)) WHERE slot = %s;\n",
				pgquote.Literal(string(m.kind)), pgquote.Literal(m.name), pgquote.Literal(reason),
				pgquote.Literal("; the next pgrelay migrate makes it as the source has it"), pgquote.Literal(slot))
		}
		b.WriteString("\tEND;\n")
	}
	b.WriteString("END")
	body := b.String()
	tag := "$pgrelay$"
	for i := 1; strings.Contains(body, tag); i++ {
		tag = fmt.Sprintf("$pgrelay%d$", i)
	}
	return "DO " + tag + "\n" + body + "\n" + tag
}

// dependentsQuery lists the views and materialized views that read, through
// their rules, a column named in $2 of a relation of the partition tree
// under $1 (the table alone when it is none), and the views reading those,
// deepest last; with each, what makes it again.
const dependentsQuery = `WITH RECURSIVE tree (relid) AS (
		SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
		UNION ALL
		SELECT i.inhrelid FROM tree JOIN pg_catalog.pg_inherits i ON i.inhparent = tree.relid),
	cols AS (SELECT a.attrelid, a.attnum FROM pg_catalog.pg_attribute a JOIN tree ON a.attrelid = tree.relid
		WHERE a.attname = ANY ($2::text[]) AND NOT a.attisdropped),
	views (oid, depth) AS (
		SELECT r.ev_class, 1 FROM pg_catalog.pg_depend d
		JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid
		JOIN cols ON cols.attrelid = d.refobjid AND cols.attnum = d.refobjsubid
		WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
			AND r.ev_class NOT IN (SELECT relid FROM tree)
		UNION
		SELECT r.ev_class, views.depth + 1 FROM views
		JOIN pg_catalog.pg_depend d ON d.refobjid = views.oid
			AND d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
		JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid
		WHERE r.ev_class <> views.oid)
	SELECT c.relkind::text, n.nspname || '.' || c.relname, pg_catalog.format('%I.%I', n.nspname, c.relname),
		pg_catalog.pg_get_viewdef(c.oid), coalesce(pg_catalog.array_to_string(c.reloptions, ', '), ''), c.relispopulated,
		pg_catalog.obj_description(c.oid, 'pg_class'),
		ARRAY(SELECT pg_catalog.format('COMMENT ON COLUMN %I.%I.%I IS %L', n.nspname, c.relname, a.attname, d.description)
			FROM pg_catalog.pg_description d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid
			WHERE d.objoid = c.oid AND d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid > 0),
		ARRAY(SELECT pg_catalog.pg_get_triggerdef(t.oid) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal ORDER BY t.tgname),
		ARRAY(SELECT pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid ORDER BY i.indexrelid),
		ARRAY(SELECT pg_catalog.format('GRANT %s ON %I.%I TO %s', a.privilege_type, n.nspname, c.relname,
				CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.rolname) END)
			FROM pg_catalog.aclexplode(c.relacl) a LEFT JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
			WHERE a.grantee <> c.relowner)
	FROM (SELECT oid, max(depth) AS depth FROM views GROUP BY oid) v
	JOIN pg_catalog.pg_class c ON c.oid = v.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	ORDER BY v.depth, c.oid`

// foreignKeysQuery lists the foreign keys (their top constraint, not a
// partition's copy) that reference a column named in $2 of a relation of
// the tree under $1, or, when $3 is set, the primary key of table $3.
const foreignKeysQuery = `WITH RECURSIVE tree (relid) AS (
		SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
		UNION ALL
		SELECT i.inhrelid FROM tree JOIN pg_catalog.pg_inherits i ON i.inhparent = tree.relid)
	SELECT c.conrelid::pg_catalog.regclass::text, cn.nspname || '.' || cr.relname, c.conname, pg_catalog.pg_get_constraintdef(c.oid),
		pg_catalog.obj_description(c.oid, 'pg_constraint')
	FROM pg_catalog.pg_constraint c
	JOIN pg_catalog.pg_class cr ON cr.oid = c.conrelid JOIN pg_catalog.pg_namespace cn ON cn.oid = cr.relnamespace
	WHERE c.contype = 'f' AND c.conparentid = 0 AND (
		c.confrelid IN (SELECT relid FROM tree) AND EXISTS (SELECT FROM pg_catalog.pg_attribute a
			WHERE a.attrelid = c.confrelid AND a.attnum = ANY (c.confkey) AND a.attname = ANY ($2::text[]))
		OR $3 <> '' AND c.conindid = (SELECT i.indexrelid FROM pg_catalog.pg_index i
			WHERE i.indrelid = pg_catalog.to_regclass($3) AND i.indisprimary))
	ORDER BY c.oid`

// dependents finds what stands in the way of prev→t on the target: columns
// is the table the column changes go to (a partitioned table for an
// attached partition, whose tree is searched), table prev's own target
// table.
func (s *Sink) dependents(ctx context.Context, conn *pgx.Conn, columns, table string, prev, t *schema.Table) (*inTheWay, error) {
	dropped, retyped := schema.ColumnsChanged(prev, t)
	keyGone := ""
	if prevKey := prev.TargetKey(); len(prevKey) > 0 && !slices.Equal(prevKey, t.TargetKey()) {
		keyGone = table
	}
	if len(dropped) == 0 && len(retyped) == 0 && keyGone == "" {
		return nil, nil
	}
	var w inTheWay
	if len(dropped)+len(retyped) > 0 {
		rows, err := conn.Query(ctx, dependentsQuery, columns, append(dropped, retyped...))
		if err != nil {
			return nil, fmt.Errorf("look up the views reading the changed columns: %w", err)
		}
		for rows.Next() {
			var kind, name, qname, def, options string
			var populated bool
			var comment *string
			var colComments, triggers, indexes, grants []string
			if err := rows.Scan(&kind, &name, &qname, &def, &options, &populated, &comment, &colComments, &triggers, &indexes, &grants); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up the views reading the changed columns: %w", err)
			}
			what, k := "VIEW", schema.KindView
			if kind == "m" {
				what, k = "MATERIALIZED VIEW", schema.KindMatView
			}
			create := "CREATE " + what + " " + qname
			if options != "" {
				create += " WITH (" + options + ")"
			}
			create += " AS " + strings.TrimSuffix(strings.TrimSpace(def), ";")
			if kind == "m" && populated {
				create += " WITH DATA"
			} else if kind == "m" {
				create += " WITH NO DATA"
			}
			stmts := []string{create}
			if comment != nil {
				stmts = append(stmts, "COMMENT ON "+what+" "+qname+" IS "+pgquote.Literal(*comment))
			}
			stmts = append(stmts, colComments...)
			stmts = append(stmts, indexes...)
			stmts = append(stmts, triggers...)
			stmts = append(stmts, grants...)
			w.restore = append(w.restore, madeAgain{kind: k, name: name, stmts: stmts})
			w.drop = append(w.drop, "DROP "+what+" "+qname)
			w.names = append(w.names, string(k)+" "+name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("look up the views reading the changed columns: %w", err)
		}
	}
	// Deepest first: a view is dropped before the view it reads.
	slices.Reverse(w.drop)
	if len(dropped) > 0 || keyGone != "" {
		rows, err := conn.Query(ctx, foreignKeysQuery, columns, dropped, keyGone)
		if err != nil {
			return nil, fmt.Errorf("look up the foreign keys referencing the changed columns: %w", err)
		}
		for rows.Next() {
			var onTable, plain, name, def string
			var comment *string
			if err := rows.Scan(&onTable, &plain, &name, &def, &comment); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up the foreign keys referencing the changed columns: %w", err)
			}
			constraint := pgx.Identifier{name}.Sanitize()
			w.drop = append(w.drop, "ALTER TABLE "+onTable+" DROP CONSTRAINT "+constraint)
			stmts := []string{"ALTER TABLE " + onTable + " ADD CONSTRAINT " + constraint + " " + def}
			if comment != nil {
				stmts = append(stmts, "COMMENT ON CONSTRAINT "+constraint+" ON "+onTable+" IS "+pgquote.Literal(*comment))
			}
			w.restore = append(w.restore, madeAgain{kind: schema.KindForeignKey, name: name + " on " + plain, stmts: stmts})
			w.names = append(w.names, "foreign key "+name+" on "+plain)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("look up the foreign keys referencing the changed columns: %w", err)
		}
	}
	if len(w.restore) == 0 {
		return nil, nil
	}
	return &w, nil
}

// dependentHint says what to do when the target refuses a column change
// for an object depending on the column that the sink does not move out of
// the way (a function's body, a policy, a trigger's column list, a rule),
// which the target's detail, in the error, names.
func dependentHint(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	if pgErr.Code != "2BP01" && !(pgErr.Code == "0A000" && strings.HasPrefix(pgErr.Message, "cannot alter type of a column used by")) {
		return err
	}
	return fmt.Errorf("%w; on the source that object was dropped or changed before this change: drop it on the target too, then start pgrelay again (the next pgrelay migrate makes what the source has)", err)
}
