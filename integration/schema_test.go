package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// schemaSourceDDL builds a source with every kind of type the PostgreSQL dialect
// creates, in non-public schemas with awkward names.
const schemaSourceDDL = `
CREATE SCHEMA "App ü";
CREATE SCHEMA ref;
CREATE TYPE "App ü".mood AS ENUM ('sad', 'ok', 'happy', 'it''s odd');
CREATE DOMAIN ref.code AS varchar(8) CHECK (VALUE ~ '^[A-Z]+$');
CREATE DOMAIN "App ü".posint AS integer DEFAULT 1 NOT NULL CHECK (VALUE > 0) CHECK (VALUE < 1000000);
CREATE TYPE "App ü"."Address" AS (street text, zip ref.code, "Floor No" "App ü".posint);
CREATE TYPE "App ü".span AS RANGE (SUBTYPE = float8);
CREATE SEQUENCE "App ü".ticket;
CREATE TABLE "App ü"."People" (
	id "App ü".posint PRIMARY KEY,
	mood "App ü".mood NOT NULL DEFAULT 'ok',
	moods "App ü".mood[] DEFAULT '{sad}',
	home "App ü"."Address",
	homes "App ü"."Address"[],
	span "App ü".span,
	zip ref.code,
	price numeric(12,4) NOT NULL DEFAULT 0,
	ratio numeric,
	name varchar(40) NOT NULL DEFAULT 'x',
	initials char(3),
	tags text[] DEFAULT '{}',
	matrix float8[],
	created timestamptz DEFAULT now(),
	at timestamp(3) DEFAULT '2020-01-02 03:04:05',
	"Mixed Case" int DEFAULT (1 + 2),
	ticket bigint DEFAULT nextval('"App ü".ticket'),
	uid uuid DEFAULT gen_random_uuid(),
	serial_id bigserial,
	ident int GENERATED ALWAYS AS IDENTITY,
	quoted text DEFAULT 'it''s \ here'
);
CREATE INDEX people_name ON "App ü"."People" (lower(name)) WHERE price > 0;
CREATE UNIQUE INDEX people_zip ON "App ü"."People" (zip);
`

// relationOf builds the Relation message pgoutput would send for a table: the
// table OID, names, replica identity and, per column, name, type OID, typmod and
// the key flag of the primary key columns.
func schemaRelationOf(ctx context.Context, t *testing.T, conn *pgx.Conn, ns, name string) *source.Relation {
	t.Helper()
	rel := &source.Relation{Namespace: ns, Name: name}
	var identity string
	err := conn.QueryRow(ctx, `
SELECT c.oid, c.relreplident FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2`, ns, name).Scan(&rel.RelationID, &identity)
	if err != nil {
		t.Fatalf("look up %s.%s: %v", ns, name, err)
	}
	rel.ReplicaIdentity = identity[0]
	rows, err := conn.Query(ctx, `
SELECT a.attname, a.atttypid, a.atttypmod, COALESCE(a.attnum = ANY (i.indkey), false)
FROM pg_catalog.pg_attribute a
LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, rel.RelationID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var (
			c     source.RelationColumn
			isKey bool
		)
		if err := rows.Scan(&c.Name, &c.TypeOID, &c.TypeMod, &isKey); err != nil {
			t.Fatal(err)
		}
		if isKey {
			c.Flags = source.ColumnFlagKey
		}
		rel.Columns = append(rel.Columns, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return rel
}

// schemaColumnInfo is what the target must reproduce of a source column.
type schemaColumnInfo struct {
	Type    string
	NotNull bool
	Default string
}

// columnsOf reads format_type, NOT NULL and default of a table's columns, with
// an empty search_path so names print qualified on both sides alike.
func schemaColumnsOf(ctx context.Context, t *testing.T, conn *pgx.Conn, ns, name string) map[string]schemaColumnInfo {
	t.Helper()
	if _, err := conn.Exec(ctx, `SET search_path = ''`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `
SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
       COALESCE(pg_catalog.pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped`, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]schemaColumnInfo{}
	for rows.Next() {
		var (
			col string
			ci  schemaColumnInfo
		)
		if err := rows.Scan(&col, &ci.Type, &ci.NotNull, &ci.Default); err != nil {
			t.Fatal(err)
		}
		cols[col] = ci
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cols) == 0 {
		t.Fatalf("table %s.%s has no columns (missing?)", ns, name)
	}
	return cols
}

// compareColumns checks the target against the source: same columns, same
// format_type, same NOT NULL, and the source's default wherever it is immutable
// (none where it is not: the target's values always come from the source).
func schemaCompareColumns(t *testing.T, src, tgt map[string]schemaColumnInfo, tbl *schema.Table) {
	t.Helper()
	for _, c := range tbl.Columns {
		s, ok := src[c.Name]
		if !ok {
			t.Errorf("column %q: not on the source", c.Name)
			continue
		}
		g, ok := tgt[c.Name]
		if !ok {
			t.Errorf("column %q: missing on the target", c.Name)
			continue
		}
		want := s
		if c.VolatileDefault && !c.PortableDefault {
			// nextval() or a user-defined function: not carried over.
			want.Default = ""
		}
		if g != want {
			t.Errorf("column %q: target %+v, want %+v (source %+v)", c.Name, g, want, s)
		}
	}
	if len(tgt) != len(tbl.Columns) {
		t.Errorf("target has %d columns, the table %d", len(tgt), len(tbl.Columns))
	}
}

func schemaQueryStrings(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%v\nSQL: %s", err, sql)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%v\nSQL: %s", err, sql)
	}
	return out
}

// schemaTypeDefinitions describes the user types of a database as text to compare.
const schemaTypeDefinitions = `
SELECT n.nspname || '.' || t.typname || ' ' || t.typtype::text || ' ' ||
       COALESCE((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid), '') || ' ' ||
       CASE WHEN t.typtype = 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) || ' notnull=' || t.typnotnull::text ||
            ' default=' || COALESCE(pg_catalog.pg_get_expr(t.typdefaultbin, 0), '') ELSE '' END || ' ' ||
       COALESCE((SELECT string_agg(pg_catalog.pg_get_constraintdef(c.oid), ',' ORDER BY c.conname) FROM pg_catalog.pg_constraint c WHERE c.contypid = t.oid AND c.contype = 'c'), '') || ' ' ||
       COALESCE((SELECT string_agg(a.attname || ':' || pg_catalog.format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum)
                 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class r ON r.oid = a.attrelid
                 WHERE a.attrelid = t.typrelid AND r.relkind = 'c' AND a.attnum > 0), '') || ' ' ||
       COALESCE((SELECT pg_catalog.format_type(r.rngsubtype, NULL) FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid), '')
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname IN ('App ü', 'ref') AND t.typtype IN ('e', 'd', 'c', 'r')
  AND (t.typtype <> 'c' OR (SELECT relkind FROM pg_catalog.pg_class WHERE oid = t.typrelid) = 'c')
ORDER BY 1`

func schemaExecTarget(ctx context.Context, t *testing.T, conn *pgx.Conn, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("target: %v\nSQL: %s", err, s)
		}
	}
}

// TestSchemaPostgresRoundTrip reads a source table's facts through the catalog,
// creates it on a fresh target database with the PostgreSQL dialect, and checks
// that the target's columns and types match the source's; then evolves the
// source table and checks the ALTER statements keep them matching.
func TestSchemaPostgresRoundTrip(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			src, tgt := harness.Postgres(t, major), harness.Postgres(t, major)
			src.Exec(t, schemaSourceDDL)
			srcConn, factsConn, tgtConn := src.Conn(t), src.Conn(t), tgt.Conn(t)
			if _, err := tgtConn.Exec(ctx, `SET search_path = ''`); err != nil {
				t.Fatal(err)
			}
			const ns, name = "App ü", "People"

			facts := schema.NewSourceFacts(factsConn)
			cat := schema.NewCatalog(facts)
			tbl, prev, changed, err := cat.Apply(ctx, schemaRelationOf(ctx, t, srcConn, ns, name))
			if err != nil {
				t.Fatal(err)
			}
			if prev != nil || !changed {
				t.Fatalf("first Apply: prev %v changed %v", prev, changed)
			}

			// Facts the test can state exactly.
			byName := map[string]schema.Column{}
			for _, c := range tbl.Columns {
				byName[c.Name] = c
			}
			for col, want := range map[string]string{
				"id": `"App ü".posint`, "mood": `"App ü".mood`, "moods": `"App ü".mood[]`,
				"home": `"App ü"."Address"`, "homes": `"App ü"."Address"[]`, "span": `"App ü".span`,
				"zip": "ref.code", "price": "numeric(12,4)", "name": "character varying(40)",
				"initials": "character(3)", "at": "timestamp(3) without time zone", "matrix": "double precision[]",
			} {
				if got := byName[col].TypeName; got != want {
					t.Errorf("column %q: TypeName %q, want %q", col, got, want)
				}
			}
			for col, want := range map[string]bool{
				"created": true, "ticket": true, "uid": true, "serial_id": true,
				"price": false, "name": false, "mood": false, "moods": false, "at": false, "Mixed Case": false, "quoted": false,
			} {
				if got := byName[col].VolatileDefault; got != want {
					t.Errorf("column %q (default %q): VolatileDefault %v, want %v", col, byName[col].Default, got, want)
				}
			}
			if !byName["id"].Key || len(tbl.KeyColumns()) != 1 {
				t.Errorf("key columns %v, want only id", tbl.KeyColumns())
			}
			if byName["ident"].Default != "" || !byName["ident"].NotNull {
				t.Errorf("identity column: %+v, want NOT NULL without default", byName["ident"])
			}
			var typeOrder []string
			for _, typ := range tbl.Types {
				typeOrder = append(typeOrder, typ.Name)
			}
			pos := func(n string) int { return slices.Index(typeOrder, n) }
			if pos("code") < 0 || pos("posint") < 0 || pos("Address") < pos("code") || pos("Address") < pos("posint") ||
				pos("_Address") < pos("Address") || pos("_mood") < pos("mood") || pos("span") < 0 {
				t.Errorf("types not in dependency order: %v", typeOrder)
			}

			// Create on the target, twice: every statement is idempotent.
			d := schema.Postgres
			tschema, _ := d.TargetTable(tbl)
			create, err := d.CreateTable(tbl)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				schemaExecTarget(ctx, t, tgtConn, append(append([]string{d.CreateSchema(tschema)}, d.CreateTypes(tbl)...), create...))
			}
			schemaCompareColumns(t, schemaColumnsOf(ctx, t, srcConn, ns, name), schemaColumnsOf(ctx, t, tgtConn, ns, name), tbl)
			srcTypes, tgtTypes := schemaQueryStrings(ctx, t, srcConn, schemaTypeDefinitions), schemaQueryStrings(ctx, t, tgtConn, schemaTypeDefinitions)
			if !slices.Equal(srcTypes, tgtTypes) || len(srcTypes) != 5 {
				t.Errorf("types differ:\nsource %q\ntarget %q", srcTypes, tgtTypes)
			}
			pkQuery := `SELECT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
				WHERE i.indrelid = '"App ü"."People"'::pg_catalog.regclass AND i.indisprimary ORDER BY a.attnum`
			if got := schemaQueryStrings(ctx, t, tgtConn, pkQuery); !slices.Equal(got, []string{"id"}) {
				t.Errorf("target primary key %v, want [id]", got)
			}

			// A row with every type goes in on the target as the source prints it.
			var row string
			src.Exec(t, `INSERT INTO "App ü"."People" (id, moods, home, homes, span, zip, initials, matrix)
				VALUES (7, '{ok,happy}', ROW('Main St', 'AB', 3), ARRAY[ROW('x', 'CD', 1)]::"App ü"."Address"[], '[1.5,2)', 'EF', 'abc', '{{1,2},{3,4}}')`)
			if err := srcConn.QueryRow(ctx, `SELECT t::text FROM "App ü"."People" t`).Scan(&row); err != nil {
				t.Fatal(err)
			}
			if _, err := tgtConn.Exec(ctx, `INSERT INTO "App ü"."People" SELECT ($1::"App ü"."People").*`, row); err != nil {
				t.Fatalf("insert the source row on the target: %v", err)
			}

			// Secondary indexes, for the snapshot copy to build after the data.
			ir, ok := facts.(schema.IndexReader)
			if !ok {
				t.Fatal("NewSourceFacts does not implement IndexReader")
			}
			defs, err := ir.IndexDefs(ctx, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(defs) != 2 || !strings.Contains(defs[0], "people_name") || !strings.Contains(defs[1], "UNIQUE INDEX people_zip") ||
				!strings.Contains(defs[0], `"App ü"."People"`) {
				t.Errorf("IndexDefs = %q, want people_name and people_zip on the qualified table", defs)
			}
			schemaExecTarget(ctx, t, tgtConn, defs)

			// Evolve the source; the catalog sees a changed relation.
			src.Exec(t, `ALTER TYPE "App ü".mood ADD VALUE 'ecstatic' AFTER 'happy'`)
			src.Exec(t, `ALTER TYPE "App ü".mood ADD VALUE 'meh' BEFORE 'sad'`)
			src.Exec(t, `
UPDATE "App ü"."People" SET ratio = 1;
ALTER TABLE "App ü"."People" ADD COLUMN note text NOT NULL DEFAULT 'n/a';
ALTER TABLE "App ü"."People" ADD COLUMN level "App ü".mood DEFAULT 'ecstatic';
ALTER TABLE "App ü"."People" DROP COLUMN at;
ALTER TABLE "App ü"."People" ALTER COLUMN price TYPE numeric(14,4);
ALTER TABLE "App ü"."People" ALTER COLUMN initials TYPE varchar(10);
ALTER TABLE "App ü"."People" RENAME COLUMN name TO "Full Name";
ALTER TABLE "App ü"."People" ALTER COLUMN "Mixed Case" SET DEFAULT 42;
ALTER TABLE "App ü"."People" ALTER COLUMN ratio SET NOT NULL;
ALTER TABLE "App ü"."People" ALTER COLUMN zip DROP DEFAULT;`)
			tbl2, prev, changed, err := cat.Apply(ctx, schemaRelationOf(ctx, t, srcConn, ns, name))
			if err != nil {
				t.Fatal(err)
			}
			if prev != tbl || !changed {
				t.Fatalf("second Apply: prev %p (want %p) changed %v", prev, tbl, changed)
			}
			alter, err := d.AlterTable(prev, tbl2)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(alter, func(s string) bool { return strings.Contains(s, `RENAME COLUMN "name" TO "Full Name"`) }) {
				t.Errorf("the rename is not a RENAME COLUMN: %q", alter)
			}
			// The UPDATE reaches the target as a change before the next Relation.
			schemaExecTarget(ctx, t, tgtConn, []string{`UPDATE "App ü"."People" SET ratio = 1`})
			schemaExecTarget(ctx, t, tgtConn, append(d.CreateTypes(tbl2), alter...))
			// NOT NULL is not added while a table evolves (the catalog is
			// today's, the changes still to come may be older and hold NULLs):
			// ratio and the added note stay nullable on the target.
			for _, c := range []string{"ratio", "note"} {
				var notNull bool
				if err := tgtConn.QueryRow(ctx, `SELECT attnotnull FROM pg_catalog.pg_attribute WHERE attrelid = '"App ü"."People"'::pg_catalog.regclass AND attname = $1`, c).Scan(&notNull); err != nil {
					t.Fatal(err)
				}
				if notNull {
					t.Errorf("target column %s became NOT NULL while the table evolved", c)
				}
			}
			schemaExecTarget(ctx, t, tgtConn, []string{`ALTER TABLE "App ü"."People" ALTER COLUMN ratio SET NOT NULL, ALTER COLUMN note SET NOT NULL`})
			schemaCompareColumns(t, schemaColumnsOf(ctx, t, srcConn, ns, name), schemaColumnsOf(ctx, t, tgtConn, ns, name), tbl2)
			var fullName, note string
			if err := tgtConn.QueryRow(ctx, `SELECT "Full Name", note FROM "App ü"."People" WHERE id = 7`).Scan(&fullName, &note); err != nil {
				t.Fatal(err)
			}
			if fullName != "x" || note != "n/a" {
				t.Errorf("after ALTER: row has Full Name %q note %q, want x (kept through the rename) and n/a (the added default)", fullName, note)
			}
			// The enum labels added on the source reached the target, in the source's order.
			labels := `SELECT e.enumlabel::text FROM pg_catalog.pg_enum e WHERE e.enumtypid = '"App ü".mood'::pg_catalog.regtype ORDER BY e.enumsortorder`
			srcLabels, tgtLabels := schemaQueryStrings(ctx, t, srcConn, labels), schemaQueryStrings(ctx, t, tgtConn, labels)
			// 'meh' precedes every label the target had: it goes before the first.
			wantLabels := []string{"meh", "sad", "ok", "happy", "ecstatic", "it's odd"}
			if !slices.Equal(tgtLabels, wantLabels) || !slices.Equal(srcLabels, tgtLabels) {
				t.Errorf("target enum labels %q, want %q (source %q)", tgtLabels, wantLabels, srcLabels)
			}

			// A column added with a volatile default cannot be reproduced.
			src.Exec(t, `ALTER TABLE "App ü"."People" ADD COLUMN token uuid DEFAULT gen_random_uuid()`)
			tbl3, prev, _, err := cat.Apply(ctx, schemaRelationOf(ctx, t, srcConn, ns, name))
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.AlterTable(prev, tbl3)
			if !errors.Is(err, schema.ErrVolatileDefault) || !strings.Contains(err.Error(), `"token"`) || !strings.Contains(err.Error(), "App ü.People") {
				t.Errorf("volatile default: err = %v", err)
			}

			// Key change: a two-column primary key.
			src.Exec(t, `ALTER TABLE "App ü"."People" DROP COLUMN token;
				ALTER TABLE "App ü"."People" DROP CONSTRAINT "People_pkey", ADD PRIMARY KEY (id, "Full Name")`)
			tbl4, _, changed, err := cat.Apply(ctx, schemaRelationOf(ctx, t, srcConn, ns, name))
			if err != nil || !changed {
				t.Fatalf("key change: changed %v err %v", changed, err)
			}
			// The target never saw token: alter from the version it has.
			alter, err = d.AlterTable(tbl2, tbl4)
			if err != nil {
				t.Fatal(err)
			}
			schemaExecTarget(ctx, t, tgtConn, alter)
			if got := schemaQueryStrings(ctx, t, tgtConn, pkQuery); !slices.Equal(got, []string{"id", "Full Name"}) {
				t.Errorf("target primary key %v, want [id Full Name]", got)
			}
		})
	}
}

// TestSchemaPostgresGoldenFilesRun runs every golden file of the PostgreSQL
// dialect on a real server, in a transaction rolled back afterwards: the SQL the
// unit tests pin down must also be SQL PostgreSQL accepts. Files of create cases
// run twice (their statements are idempotent).
// TestSchemaIndexDefsOf: the index definitions of many tables read in one
// query are those read table by table, of every kind IndexDefs handles.
func TestSchemaIndexDefsOf(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			src := harness.Postgres(t, major)
			src.Exec(t, `
CREATE EXTENSION IF NOT EXISTS btree_gist;
CREATE SCHEMA "S p";
CREATE TABLE "S p"."T 1" (id int PRIMARY KEY, a int, b text, UNIQUE (a) DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX "b idx" ON "S p"."T 1" (lower(b)) WHERE a > 0;
CREATE INDEX ab_idx ON "S p"."T 1" (a) INCLUDE (b);
CREATE TABLE public.full_pk (id int PRIMARY KEY, v text);
ALTER TABLE public.full_pk REPLICA IDENTITY FULL;
CREATE TABLE public.ri_index (id int NOT NULL, k int NOT NULL, UNIQUE (k));
CREATE UNIQUE INDEX ri_idx ON public.ri_index (id);
ALTER TABLE public.ri_index REPLICA IDENTITY USING INDEX ri_idx;
CREATE TABLE public.excl (id int PRIMARY KEY, r int4range, EXCLUDE USING gist (r WITH &&));
CREATE TABLE public.no_index (v text);
CREATE TABLE public.deferred_pk (id int PRIMARY KEY DEFERRABLE, v text);`)
			facts := schema.NewSourceFacts(src.Conn(t)).(*schema.SourceFacts)
			names := []schema.QualifiedName{{Schema: "S p", Name: "T 1"}, {Schema: "public", Name: "full_pk"}, {Schema: "public", Name: "ri_index"},
				{Schema: "public", Name: "excl"}, {Schema: "public", Name: "no_index"}, {Schema: "public", Name: "deferred_pk"}, {Schema: "public", Name: "missing"}}
			all, err := facts.IndexDefsOf(ctx, names)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range names {
				one, err := facts.IndexDefs(ctx, n.Schema, n.Name)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(all[n], one) {
					t.Errorf("%s.%s: IndexDefsOf gives %q, IndexDefs %q", n.Schema, n.Name, all[n], one)
				}
				total += len(one)
			}
			if total != 7 || len(all[schema.QualifiedName{Schema: "S p", Name: "T 1"}]) != 3 {
				t.Errorf("%d definitions in all, %q for \"S p\".\"T 1\": the tables' indexes were not read", total, all[schema.QualifiedName{Schema: "S p", Name: "T 1"}])
			}

			// Found by OID, the same indexes, on the table the target has
			// under another name: each definition builds there.
			src.Exec(t, `CREATE TABLE public.parted (id int, v int) PARTITION BY RANGE (id);
CREATE INDEX "x ON public.parted USING y" ON public.parted (v);
CREATE SCHEMA "tgt s"`)
			names = append(names, schema.QualifiedName{Schema: "public", Name: "parted"})
			for _, n := range names {
				one, err := facts.IndexDefs(ctx, n.Schema, n.Name)
				if err != nil {
					t.Fatal(err)
				}
				qsrc := pgx.Identifier{n.Schema, n.Name}.Sanitize()
				oid := uint32(1) // no table: no indexes
				if n.Name != "missing" {
					v, err := strconv.ParseUint(src.QueryString(t, "SELECT $1::regclass::oid::text", qsrc), 10, 32)
					if err != nil {
						t.Fatal(err)
					}
					oid = uint32(v)
				}
				as := schema.QualifiedName{Schema: "tgt s", Name: `R "` + n.Name + `"`}
				defs, err := facts.RelationIndexDefs(ctx, oid, as.Schema, as.Name)
				if err != nil {
					t.Fatalf("%s: %v", qsrc, err)
				}
				if len(defs) != len(one) {
					t.Errorf("%s: RelationIndexDefs gives %q, IndexDefs %q", qsrc, defs, one)
				}
				if n.Name == "missing" {
					continue
				}
				qas := pgx.Identifier{as.Schema, as.Name}.Sanitize()
				// The indexes on one key's columns alike: on "T 1", the
				// DEFERRABLE unique constraint on a and ab_idx.
				byName, err := facts.KeyIndexDefs(ctx, n.Schema, n.Name, []string{"a"})
				if err != nil {
					t.Fatal(err)
				}
				byOID, err := facts.RelationKeyIndexDefs(ctx, oid, as.Schema, as.Name, []string{"a"})
				if err != nil {
					t.Fatal(err)
				}
				if len(byOID) != len(byName) || n.Name == "T 1" && (len(byOID) != 2 || !strings.Contains(byOID[0], qas) || !strings.Contains(byOID[1], qas)) {
					t.Errorf("%s: RelationKeyIndexDefs gives %q, KeyIndexDefs %q", qsrc, byOID, byName)
				}
				src.Exec(t, "CREATE TABLE "+qas+" (LIKE "+qsrc+")")
				for _, def := range defs {
					if !strings.Contains(def, qas) {
						t.Errorf("%s: a definition for %s does not name it: %s", qsrc, qas, def)
					}
					src.Exec(t, def)
				}
				if got := src.QueryString(t, "SELECT count(*)::text FROM pg_catalog.pg_index WHERE indrelid = $1::regclass", qas); got != strconv.Itoa(len(defs)) {
					t.Errorf("%s: %d definitions made %s indexes on %s", qsrc, len(defs), got, qas)
				}
			}
		})
	}
}

// TestSchemaTableFactsOf: the facts of many tables read in one query are
// those read one table at a time, types included; a missing table has empty
// facts; and a generated column whose table a transaction holds locked sends
// the batch back to reading table by table, as TableFacts does.
func TestSchemaTableFactsOf(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			src := harness.Postgres(t, major)
			src.Exec(t, schemaSourceDDL+`
CREATE TABLE ref.plain (id int PRIMARY KEY, c char(5), z ref.code);
CREATE TABLE ref.gen (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) STORED);
CREATE TABLE "App ü"."Other" (id bigint, home "App ü"."Address", m "App ü".mood);`)
			facts := schema.NewSourceFacts(src.Conn(t)).(*schema.SourceFacts)
			names := []schema.QualifiedName{{Schema: "App ü", Name: "People"}, {Schema: "ref", Name: "plain"}, {Schema: "ref", Name: "gen"},
				{Schema: "App ü", Name: "Other"}, {Schema: "public", Name: "missing"}}
			check := func(all map[schema.QualifiedName]schema.TableFacts) {
				t.Helper()
				for _, n := range names {
					one, err := facts.TableFacts(ctx, n.Schema, n.Name)
					if err != nil {
						t.Fatal(err)
					}
					got, ok := all[n]
					if !ok {
						t.Errorf("%s.%s: no entry", n.Schema, n.Name)
						continue
					}
					if !reflect.DeepEqual(got, one) {
						t.Errorf("%s.%s: TableFactsOf gives\n%+v\nTableFacts\n%+v", n.Schema, n.Name, got, one)
					}
				}
				people := all[schema.QualifiedName{Schema: "App ü", Name: "People"}]
				if len(people.Columns) != 21 || len(people.Types) < 4 || all[schema.QualifiedName{Schema: "ref", Name: "gen"}].Columns["b"].Generated == "" {
					t.Errorf("People: %d columns, %d types; gen.b %+v: the facts were not read", len(people.Columns), len(people.Types), all[schema.QualifiedName{Schema: "ref", Name: "gen"}].Columns["b"])
				}
			}
			all, err := facts.TableFactsOf(ctx, names)
			if err != nil {
				t.Fatal(err)
			}
			check(all)

			// A transaction holding ref.gen locked: the generated expression
			// cannot be read; TableFacts leaves it out, and so does the batch.
			locker := src.Conn(t)
			if _, err := locker.Exec(ctx, "BEGIN; LOCK TABLE ref.gen IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			all, err = facts.TableFactsOf(ctx, names)
			if err != nil {
				t.Fatal(err)
			}
			if g := all[schema.QualifiedName{Schema: "ref", Name: "gen"}].Columns["b"]; g.TypeName != "integer" || g.Generated != "" {
				t.Errorf("gen.b under a lock: %+v", g)
			}
			if len(all[schema.QualifiedName{Schema: "App ü", Name: "People"}].Columns) != 21 {
				t.Errorf("People under another table's lock: %d columns", len(all[schema.QualifiedName{Schema: "App ü", Name: "People"}].Columns))
			}
			if _, err := locker.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSchemaPostgresGoldenFilesRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "schema", "testdata", "postgres", "*.sql"))
	if err != nil || len(files) < 10 {
		t.Fatalf("golden files: %v (%d found)", err, len(files))
	}
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			conn := harness.Postgres(t, major).Conn(t)
			ran := 0
			for _, file := range files {
				sql, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(sql), "-- error:") {
					continue
				}
				runs := 1
				if strings.HasPrefix(filepath.Base(file), "create_") {
					runs = 2
				}
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for range runs {
					if _, err := tx.Exec(ctx, string(sql)); err != nil {
						t.Errorf("%s: %v", filepath.Base(file), err)
						break
					}
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				ran++
			}
			if ran < 10 {
				t.Errorf("ran %d golden files, want at least 10", ran)
			}
		})
	}
}

// TestSchemaBuiltinTypeNames checks the catalog's fallback spelling of built-in
// types against the server's own format_type.
func TestSchemaBuiltinTypeNames(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn := harness.Postgres(t, major).Conn(t)
			oids := schemaQueryStrings(ctx, t, conn, `SELECT oid::text FROM pg_catalog.pg_type WHERE oid < 16384 ORDER BY oid`)
			typmods := map[string][]int32{
				"character varying": {14, 259}, "bpchar": {5, 104}, "numeric": {(10<<16 | 2) + 4, (38 << 16) + 4},
				"time without time zone": {0, 3}, "time with time zone": {6}, "timestamp without time zone": {0, 3},
				"timestamp with time zone": {6}, "bit": {1, 8}, "bit varying": {16},
				"interval": {0x7fff<<16 | 3, (1<<3|1<<10|1<<11|1<<12)<<16 | 0xffff, (1<<3|1<<10|1<<11|1<<12)<<16 | 2,
					(1<<2|1<<1)<<16 | 0xffff, (1<<11)<<16 | 0xffff, (1<<10|1<<11)<<16 | 0xffff},
			}
			if major >= 15 {
				typmods["numeric"] = append(typmods["numeric"], (5<<16|(-3&0x7ff))+4)
			}
			checked := 0
			for _, s := range oids {
				var oid uint32
				if _, err := fmt.Sscan(s, &oid); err != nil {
					t.Fatal(err)
				}
				base, ok := schema.BuiltinTypeName(oid, -1)
				if !ok {
					continue
				}
				mods := append([]int32{-1}, typmods[strings.TrimSuffix(base, "[]")]...)
				for _, mod := range mods {
					want, _ := schema.BuiltinTypeName(oid, mod)
					var got string
					if err := conn.QueryRow(ctx, `SELECT pg_catalog.format_type($1, $2)`, oid, mod).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("oid %d typmod %d: format_type %q, BuiltinTypeName %q", oid, mod, got, want)
					}
					checked++
				}
			}
			if checked < 100 {
				t.Errorf("checked %d spellings, want at least 100", checked)
			}
		})
	}
}

// TestSchemaBinaryCopyTypes checks the binary copy list against the server's
// catalog: each name is the type's pg_catalog name, each array's element is
// listed too, and a cast to the quoted name, as the snapshot copy writes it,
// keeps a value of a column with typmod as it is.
func TestSchemaBinaryCopyTypes(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn := harness.Postgres(t, major).Conn(t)
			rows, err := conn.Query(ctx, `SELECT t.oid, t.typname::text, n.nspname::text, t.typelem, t.typcategory = 'A'
				FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE t.oid < 16384`)
			if err != nil {
				t.Fatal(err)
			}
			type typ struct {
				name, nspname string
				elem          uint32
				array         bool
			}
			types := map[uint32]typ{}
			var oid uint32
			var ty typ
			if _, err := pgx.ForEachRow(rows, []any{&oid, &ty.name, &ty.nspname, &ty.elem, &ty.array}, func() error {
				types[oid] = ty
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			listed := 0
			for oid, ty := range types {
				name, ok := schema.BinaryCopyType(oid)
				if !ok {
					continue
				}
				listed++
				if name != ty.name || ty.nspname != "pg_catalog" {
					t.Errorf("oid %d is %s.%s, listed as %s", oid, ty.nspname, ty.name, name)
				}
				if _, ok := schema.BinaryCopyType(ty.elem); ty.array && !ok {
					t.Errorf("array %s is listed, its element %s is not", ty.name, types[ty.elem].name)
				}
				cast := pgx.Identifier{"pg_catalog", name}.Sanitize()
				var got uint32
				if err := conn.QueryRow(ctx, "SELECT $1::pg_catalog.regtype::pg_catalog.oid", cast).Scan(&got); err != nil || got != oid {
					t.Errorf("%s names oid %d, %v; want %d", cast, got, err, oid)
				}
			}
			if listed != 62 {
				t.Errorf("%d listed types on the server, want 31 and their arrays", listed)
			}
			// Casts without typmod leave a value of a column with typmod as it is
			// (where the grammar's bit means bit(1) and char means bpchar(1)).
			for expr, want := range map[string]string{
				`B'10101'::bit(5)::"pg_catalog"."bit"`:                                   "10101",
				`B'101'::bit varying(5)::"pg_catalog"."varbit"`:                          "101",
				`'ab'::char(4)::"pg_catalog"."bpchar" || '|'`:                            "ab|",
				`pg_catalog.octet_length('ab'::char(4)::"pg_catalog"."bpchar")`:          "4",
				`'abc'::varchar(3)::"pg_catalog"."varchar"`:                              "abc",
				`'x'::"char"::"pg_catalog"."char"`:                                       "x",
				`pg_catalog.pg_typeof('x'::"char"::"pg_catalog"."char")::text`:           `"char"`,
				`1.239::numeric(10,3)::"pg_catalog"."numeric"`:                           "1.239",
				`'12:34:56.789'::time(3)::"pg_catalog"."time"`:                           "12:34:56.789",
				`'2024-02-29 12:34:56.789'::timestamp(3)::"pg_catalog"."timestamp"`:      "2024-02-29 12:34:56.789",
				`'1 day 02:03:04.5'::interval day to second(1)::"pg_catalog"."interval"`: "1 day 02:03:04.5",
				`'{1.25,NULL}'::numeric(5,2)[]::"pg_catalog"."_numeric"`:                 "{1.25,NULL}",
			} {
				if got := schemaQueryStrings(ctx, t, conn, "SELECT ("+expr+")::text"); len(got) != 1 || got[0] != want {
					t.Errorf("%s = %q, want %q", expr, got, want)
				}
			}
		})
	}
}
