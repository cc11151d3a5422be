package schema

import (
	"slices"
	"strings"
	"testing"
)

// partitionVersions are two versions of one partition p1: b dropped, a
// renamed to a2 and retyped, c added with a default, d's NOT NULL dropped
// and its default changed.
func partitionVersions() (prev, next *Table) {
	prev = table("public", "p1", IdentityDefault,
		col("id", "integer", key, attnum(1)), col("a", "integer", attnum(2), dflt("0")), col("b", "text", attnum(3)),
		col("d", "text", attnum(4), notNull, dflt("'x'::text")))
	next = table("public", "p1", IdentityDefault,
		col("id", "integer", key, attnum(1)), col("a2", "bigint", attnum(2), dflt("0")),
		col("d", "text", attnum(4), dflt("'y'::text")), col("c", "integer", attnum(6), dflt("7"), fill("7")))
	return prev, next
}

// The column changes go to the partitioned table; the defaults of columns
// not retyped and the key stay the partition's own.
func TestPostgresAlterPartition(t *testing.T) {
	prev, next := partitionVersions()
	stmts, err := PostgresDialect{}.AlterPartition(prev, next, QualifiedName{Schema: "public", Name: "root"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ALTER TABLE "public"."root" DROP COLUMN IF EXISTS "b"`,
		`ALTER TABLE "public"."root" RENAME COLUMN "a" TO "a2"`,
		`ALTER TABLE "public"."root" ADD COLUMN IF NOT EXISTS "c" integer DEFAULT 7`,
		`ALTER TABLE "public"."root" ALTER COLUMN "a2" DROP DEFAULT`,
		`ALTER TABLE "public"."root" ALTER COLUMN "a2" TYPE bigint USING "a2"::bigint`,
		`ALTER TABLE "public"."root" ALTER COLUMN "a2" SET DEFAULT 0`,
		`ALTER TABLE "public"."p1" ALTER COLUMN "d" SET DEFAULT 'y'::text`,
		`ALTER TABLE "public"."root" ALTER COLUMN "d" DROP NOT NULL`,
	}
	if !slices.Equal(stmts, want) {
		t.Errorf("AlterPartition:\n%s\nwant\n%s", strings.Join(stmts, "\n"), strings.Join(want, "\n"))
	}
	own, err := Postgres.AlterTable(prev, next)
	if err != nil {
		t.Fatal(err)
	}
	for i := range own {
		if w := strings.Replace(want[i], `"public"."root"`, `"public"."p1"`, 1); own[i] != w {
			t.Errorf("AlterTable statement %d: %s, want %s", i, own[i], w)
		}
	}
}

// A sibling partition's definition follows the change made through the
// partitioned table, by name: its own attribute numbers, key and defaults
// stay; then its own next definition, which the source sends with the same
// change, needs nothing more on the target, and a later rename of the added
// column is a rename.
func TestFollowPartitionChange(t *testing.T) {
	prev, next := partitionVersions()
	// p2's columns, numbered its own way (a column dropped before it was
	// attached), with a default of its own.
	sib := table("public", "p2", IdentityDefault,
		col("id", "integer", key, attnum(1)), col("a", "integer", attnum(3), dflt("0")), col("b", "text", attnum(4)),
		col("d", "text", attnum(5), notNull, dflt("'p2'::text")))
	got := FollowPartitionChange(prev, next, sib)
	var names []string
	for _, c := range got.Columns {
		names = append(names, c.Name+" "+c.TypeName+" "+string(c.Default))
	}
	if want := []string{"id integer ", "a2 bigint 0", "d text 'p2'::text", "c integer 7"}; !slices.Equal(names, want) {
		t.Fatalf("followed columns %q, want %q", names, want)
	}
	if got.Name != "p2" || got.Column("a2").Attnum != 3 || got.Column("d").Attnum != 5 || got.Column("d").NotNull || got.Column("c").Attnum != 0 || !got.Column("id").Key {
		t.Errorf("followed definition %+v", got)
	}
	if sib.Column("a") == nil {
		t.Error("FollowPartitionChange changed the definition it was given")
	}
	// p2's own next definition: the same columns, its own numbers.
	own := table("public", "p2", IdentityDefault,
		col("id", "integer", key, attnum(1)), col("a2", "bigint", attnum(3), dflt("0")),
		col("d", "text", attnum(5), dflt("'p2'::text")), col("c", "integer", attnum(7), dflt("7"), fill("7")))
	if !SameDefinition(got, own) || !LearnsNumbers(got, own) || LearnsNumbers(own, own) {
		t.Errorf("p2's own next definition: same %t, learns numbers %t (want true, true)", SameDefinition(got, own), LearnsNumbers(got, own))
	}
	stmts, err := PostgresDialect{}.AlterPartition(got, own, QualifiedName{Schema: "public", Name: "root"})
	if err != nil || len(stmts) != 0 {
		t.Errorf("p2's own change after following: %q, %v; want nothing", stmts, err)
	}
	renamed := *own
	renamed.Columns = slices.Clone(own.Columns)
	renamed.Columns[3].Name = "c2"
	if stmts, _ := Postgres.AlterTable(own, &renamed); !slices.Equal(stmts, []string{`ALTER TABLE "public"."p2" RENAME COLUMN "c" TO "c2"`}) {
		t.Errorf("a rename of the added column once its number is known: %q", stmts)
	}
}

// What other objects may depend on: the columns dropped (by their old
// name) and retyped; not one renamed or whose default changed.
func TestColumnsChanged(t *testing.T) {
	prev, next := partitionVersions()
	dropped, retyped := ColumnsChanged(prev, next)
	if !slices.Equal(dropped, []string{"b"}) || !slices.Equal(retyped, []string{"a"}) {
		t.Errorf("ColumnsChanged = %q, %q; want [b], [a]", dropped, retyped)
	}
	prev.Generated = []GeneratedColumn{{Name: "g", TypeName: "integer", Expr: "(id * 2)"}, {Name: "h", TypeName: "integer", Expr: "(id * 3)"}, {Name: "k", TypeName: "integer", Expr: "1"}}
	next.Generated = []GeneratedColumn{{Name: "g", TypeName: "integer", Expr: "(id * 4)"}, {Name: "k", TypeName: "integer", Expr: "1"}}
	if dropped, _ = ColumnsChanged(prev, next); !slices.Equal(dropped, []string{"b", "g", "h"}) {
		t.Errorf("with generated columns, dropped %q; want [b g h]", dropped)
	}
	if dropped, retyped = ColumnsChanged(next, next); len(dropped)+len(retyped) != 0 {
		t.Errorf("no change: %q, %q", dropped, retyped)
	}
}

// A partition's primary key that is its partitioned table's stays when its
// replica identity changes; one of its own goes, and one is added only
// where it has none.
func TestPostgresAlterPartitionKey(t *testing.T) {
	prev := table("public", "p1", IdentityDefault, col("id", "integer", key, attnum(1)), col("v", "text", attnum(2)))
	full := table("public", "p1", IdentityFull, col("id", "integer", notNull, attnum(1)), col("v", "text", attnum(2)))
	stmts, err := PostgresDialect{}.AlterPartition(prev, full, QualifiedName{Schema: "public", Name: "root"})
	if err != nil || len(stmts) != 1 || !strings.Contains(stmts[0], "contype = 'p' AND coninhcount = 0;") {
		t.Errorf("key dropped: %q, %v", stmts, err)
	}
	stmts, err = PostgresDialect{}.AlterPartition(full, prev, QualifiedName{Schema: "public", Name: "root"})
	if err != nil || len(stmts) != 1 || !strings.Contains(stmts[0], `IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conrelid = '"public"."p1"'::pg_catalog.regclass AND contype = 'p') THEN`) {
		t.Errorf("key added: %q, %v", stmts, err)
	}
	if stmts, _ := Postgres.AlterTable(prev, full); strings.Contains(strings.Join(stmts, ";"), "coninhcount") {
		t.Errorf("a table of its own: %q", stmts)
	}
}
