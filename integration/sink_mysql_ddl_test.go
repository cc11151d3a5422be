package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

// myColumns lists a target table's columns as name type, in order.
func myColumns(t *testing.T, my *harness.MY, db, table string) string {
	t.Helper()
	return my.QueryString(t, `SELECT GROUP_CONCAT(CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE, IF(IS_NULLABLE = 'NO', ' not null', ''),
		IF(COLUMN_DEFAULT IS NULL OR COLUMN_DEFAULT = 'NULL', '', CONCAT(' default ', COLUMN_DEFAULT))) ORDER BY ORDINAL_POSITION SEPARATOR ', ')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, db, table)
}

func myKey(t *testing.T, my *harness.MY, db, table string) string {
	t.Helper()
	return my.QueryString(t, `SELECT COALESCE(GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX), '') FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`, db, table)
}

func wantEqual(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func col(name, typeName string, oid uint32, typmod int32, attnum int16) schema.Column {
	return schema.Column{Name: name, TypeName: typeName, TypeOID: oid, TypeMod: typmod, Attnum: attnum}
}

// TestSinkMySQLEnsureTables: a table evolves on MariaDB as on the source —
// columns added with the value existing rows hold, dropped, renamed, swapped,
// retyped, the key moved onto a text column, the table moved to another
// schema — and a new session (which knows no previous version) finds the
// table as it left it.
func TestSinkMySQLEnsureTables(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	db := my.DB
	T, N := sinktest.T, sinktest.N
	key := func(c schema.Column) schema.Column { c.Key, c.NotNull = true, true; return c }
	v1 := &schema.Table{RelationID: 18001, Schema: "public", Name: "evo", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		key(col("id", "integer", 23, -1, 1)), col("a", "text", 25, -1, 2), col("b", "text", 25, -1, 3), col("n", "integer", 23, -1, 4)}}
	ensure(t, s, v1)
	mustApply(t, s, 100, sinktest.Ins(v1, 1, sinktest.Row(T("1"), T("a1"), T("b1"), T("7"))), sinktest.Ins(v1, 2, sinktest.Row(T("2"), T("a2"), N(), N())))

	// Added with fill values (and a later default), one dropped, a and b swapped.
	v2 := &schema.Table{RelationID: 18001, Schema: "public", Name: "evo", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		key(col("id", "integer", 23, -1, 1)), col("b", "text", 25, -1, 2), col("a", "text", 25, -1, 3),
		col("status", "text", 25, -1, 5), col("score", "numeric(5,2)", 1700, 5<<16|2+4, 6), col("tags", "text[]", 1009, -1, 7)}}
	v2.Columns[3].Fill = &schema.Value{Text: "it's active", TypeName: "text"}
	v2.Columns[4].Fill = &schema.Value{Text: "1.50", TypeName: "numeric(5,2)"}
	v2.Columns[4].Default, v2.Columns[4].DefaultValue = "2.25", &schema.Value{Text: "2.25", TypeName: "numeric(5,2)"}
	v2.Columns[5].Default, v2.Columns[5].DefaultValue = `'{x,"y z"}'::text[]`, &schema.Value{Text: `{x,"y z"}`, TypeName: "text[]"}
	if err := s.EnsureTable(t.Context(), v2, v1); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "columns", myColumns(t, my, db, "evo"),
		"id int(11) not null, b longtext, a longtext, status longtext, score decimal(5,2) default 2.25, tags longtext default '[\"x\",\"y z\"]'")
	wantMyQuery(t, my, `1|a1|b1|it's active|1.50;2|a2||it's active|1.50`,
		"SELECT GROUP_CONCAT(CONCAT_WS('|', id, b, COALESCE(a, ''), status, score) ORDER BY id SEPARATOR ';') FROM evo")
	wantMyQuery(t, my, `["x","y z"];["x","y z"]`, "SELECT GROUP_CONCAT(tags ORDER BY id SEPARATOR ';') FROM evo")
	mustApply(t, s, 200, sinktest.Ins(v2, 101, sinktest.Row(T("3"), T("b3"), T("a3"), N(), T("9.99"), T("{q}"))))

	// A new session: the first Relation message comes without a previous
	// version; the stored one says the table is there already.
	s2 := (&mySinkTarget{my: my}).open(t)
	if _, err := s2.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	ensure(t, s2, v2)
	wantMyQuery(t, my, "3", "SELECT COUNT(*) FROM evo")

	// Retyped, the key moved onto (id, b), the defaults dropped on the
	// source; then moved to another schema.
	v3 := &schema.Table{RelationID: 18001, Schema: "public", Name: "evo", ReplicaIdentity: schema.IdentityIndex, Columns: []schema.Column{
		key(col("id", "bigint", 20, -1, 1)), key(col("b", "text", 25, -1, 2)), col("a", "character varying(10)", 1043, 14, 3),
		col("status", "text", 25, -1, 5), col("score", "numeric(7,2)", 1700, 7<<16|2+4, 6), col("tags", "text[]", 1009, -1, 7)}}
	mustApply(t, s2, 300, sinktest.Upd(v2, 201, sinktest.Row(T("2"), T("b2"), T("a2"), N(), T("1.50"), N())))
	if err := s2.EnsureTable(t.Context(), v3, nil); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "columns", myKey(t, my, db, "evo"), "id,b")
	wantEqual(t, "columns", myColumns(t, my, db, "evo"),
		"id bigint(20) not null, b varchar(766) not null, a varchar(10), status longtext, score decimal(7,2), tags longtext")
	mustApply(t, s2, 400, sinktest.Upd(v3, 301, sinktest.Row(T("1"), T("a1"), T("A1"), sinktest.U(), T("3.00"), sinktest.U())))
	wantMyQuery(t, my, "A1|3.00|it's active", "SELECT CONCAT_WS('|', a, score, status) FROM evo WHERE id = 1")

	v4 := *v3
	v4.Schema, v4.Name = "evo_archive", "evo moved"
	my.Exec(t, "DROP DATABASE IF EXISTS evo_archive")
	if err := s2.EnsureTable(t.Context(), &v4, v3); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "3", "SELECT COUNT(*) FROM evo_archive.`evo moved`")
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'evo'", db)
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM pgrelay_relation WHERE relation_oid = 18001")
	// A new session finds the moved table by its OID, from the old name too.
	s3 := (&mySinkTarget{my: my}).open(t)
	if _, err := s3.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	ensure(t, s3, &v4)
	mustApply(t, s3, 500, sinktest.Del(&v4, 401, source.OldKey, sinktest.Row(T("3"), T("b3"), N(), N(), N(), N())))
	wantMyQuery(t, my, "2", "SELECT COUNT(*) FROM evo_archive.`evo moved`")

	// A column added with a default MySQL cannot reproduce is refused as on
	// PostgreSQL, and the table is left as it was.
	v5 := v4
	v5.Columns = append(append([]schema.Column(nil), v4.Columns...), col("at", "timestamp with time zone", 1184, -1, 8))
	v5.Columns[6].Default, v5.Columns[6].VolatileDefault = "now()", true
	err := s3.EnsureTable(t.Context(), &v5, &v4)
	if err == nil || !strings.Contains(err.Error(), "now()") || !strings.Contains(err.Error(), "PGRELAY_SNAPSHOT=always") {
		t.Fatalf("volatile default added: %v", err)
	}
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'evo_archive' AND COLUMN_NAME = 'at'")
	// What MySQL cannot name is refused at CREATE, naming what to change.
	bad := &schema.Table{RelationID: 18002, Schema: "public", Name: "bad", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		key(col("Id", "integer", 23, -1, 1)), col("id", "text", 25, -1, 2)}}
	if err := s3.EnsureTable(t.Context(), bad, nil); err == nil || !strings.Contains(err.Error(), `"Id" and "id"`) {
		t.Fatalf("colliding column names: %v", err)
	}
	meta := &schema.Table{RelationID: 18003, Schema: "public", Name: "pgrelay_progress", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{key(col("id", "integer", 23, -1, 1))}}
	if err := s3.EnsureTable(t.Context(), meta, nil); err == nil || !strings.Contains(err.Error(), "pgrelay_progress") || !strings.Contains(err.Error(), "PGRELAY_TABLES") {
		t.Fatalf("a source table named like pgrelay's metadata: %v", err)
	}
}

// TestSinkMySQLInterruptedChange: a table change MySQL committed half-way
// (a later statement failed, or pgrelay was killed between two) is finished
// by the next session from the step it reached: no step runs twice, no
// duplicate column, the swap not undone.
func TestSinkMySQLInterruptedChange(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	T := sinktest.T
	key := func(c schema.Column) schema.Column { c.Key, c.NotNull = true, true; return c }
	v1 := &schema.Table{RelationID: 18101, Schema: "public", Name: "half", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		key(col("id", "integer", 23, -1, 1)), col("a", "text", 25, -1, 2), col("b", "text", 25, -1, 3), col("code", "character varying(20)", 1043, 24, 4)}}
	ensure(t, s, v1)
	mustApply(t, s, 100, sinktest.Ins(v1, 1, sinktest.Row(T("1"), T("A"), T("B"), T("long code here"))))
	// v2 swaps a and b, adds c with a fill value and narrows code: the last
	// step fails on the target's row, after the swap and the ADD COLUMN ran.
	v2 := &schema.Table{RelationID: 18101, Schema: "public", Name: "half", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		key(col("id", "integer", 23, -1, 1)), col("b", "text", 25, -1, 2), col("a", "text", 25, -1, 3), col("code", "character varying(5)", 1043, 9, 4),
		col("c", "integer", 23, -1, 5)}}
	v2.Columns[4].Fill = &schema.Value{Text: "42", TypeName: "integer"}
	err := s.EnsureTable(t.Context(), v2, v1)
	if err == nil || !strings.Contains(err.Error(), "MODIFY COLUMN `code`") {
		t.Fatalf("narrowing code: %v, want the MODIFY's error", err)
	}
	wantEqual(t, "columns", my.QueryString(t, `SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'half'`), "id,b,a,code,c")
	steps := my.QueryString(t, "SELECT pending_step FROM pgrelay_relation WHERE target_name = 'half' AND pending IS NOT NULL")
	if steps == "0" {
		t.Fatalf("pending_step 0: the steps that ran are not recorded")
	}
	// The row is fixed on the target; a new session (the first Relation
	// message again, without a previous version) finishes the change.
	my.Exec(t, "UPDATE half SET code = 'short' WHERE id = 1")
	s2 := (&mySinkTarget{my: my}).open(t)
	if _, err := s2.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	ensure(t, s2, v2)
	// Swapped once: a holds what b held.
	wantMyQuery(t, my, "1|B|A|short|42", "SELECT CONCAT_WS('|', id, a, b, code, c) FROM half")
	wantMyQuery(t, my, "varchar(5)", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'half' AND COLUMN_NAME = 'code'")
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM pgrelay_relation WHERE pending IS NOT NULL")
	mustApply(t, s2, 200, sinktest.Ins(v2, 101, sinktest.Row(T("2"), T("b2"), T("a2"), T("x"), T("7"))))
	wantMyQuery(t, my, "2|a2|b2|x|7", "SELECT CONCAT_WS('|', id, a, b, code, c) FROM half WHERE id = 2")
}

// TestSinkMySQLCrashBetweenDDLAndCommit: pgrelay killed after a table change
// and before the transaction that needed it committed. The restarted session
// gets the transaction again, with its Relation message: the column is not
// added twice, and the transaction's changes are applied once.
func TestSinkMySQLCrashBetweenDDLAndCommit(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	T, N := sinktest.T, sinktest.N
	v1 := sinktest.ItemsTable("public", "crashy")
	ensure(t, s, v1)
	mustApply(t, s, 100, sinktest.Ins(v1, 1, sinktest.Row(T("1"), T("one"), N())))
	v2 := sinktest.ItemsTable("public", "crashy")
	v2.Columns = append(v2.Columns, schema.Column{Name: "extra", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 4,
		Fill: &schema.Value{Text: "filled", TypeName: "text"}})
	// The source transaction at 200: the ALTER, then an insert and an update.
	if err := s.EnsureTable(t.Context(), v2, v1); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, sinktest.Ins(v2, 150, sinktest.Row(T("2"), T("two"), N(), T("x")))); err != nil {
		t.Fatal(err)
	}
	// Killed here: the session ends without a commit.
	_ = s.Close(context.Background())

	s2 := (&mySinkTarget{my: my}).open(t)
	p, err := s2.Setup(ctx, sinktest.Slot)
	if err != nil {
		t.Fatal(err)
	}
	if p.LSN != 100 {
		t.Fatalf("progress after the kill: %s, want 0/64", p.LSN)
	}
	// The restart: the source sends the transaction again, Relation first.
	ensure(t, s2, v2)
	mustApply(t, s2, 200,
		sinktest.Ins(v2, 150, sinktest.Row(T("2"), T("two"), N(), T("x"))),
		sinktest.Upd(v2, 160, sinktest.Row(T("1"), T("one"), N(), sinktest.U())))
	wantMyQuery(t, my, "1|one|filled;2|two|x", "SELECT GROUP_CONCAT(CONCAT_WS('|', id, name, extra) ORDER BY id SEPARATOR ';') FROM crashy")
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'crashy' AND COLUMN_NAME = 'extra'")
	if p, _ := s2.Progress(ctx, sinktest.Slot); p.LSN != 200 {
		t.Fatalf("progress %s, want 0/C8", p.LSN)
	}
}
