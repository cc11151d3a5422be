package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
)

// TestSinkMySQLForeignKeyHeldByPrepared: a prepared XA transaction that
// wrote a table holds it until its XA COMMIT, which comes with the source's
// COMMIT PREPARED, after the migration: the foreign key on that table waits
// a bounded time, is left out saying why (the migration goes on), and is
// made by the next migration once the transaction is over.
func TestSinkMySQLForeignKeyHeldByPrepared(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	parent, child := sinktest.ItemsTable("public", "held_parent"), sinktest.ItemsTable("public", "held_child")
	ensure(t, s, parent, child)
	ctx := t.Context()
	fk := &schema.Object{Kind: schema.KindForeignKey, Name: "held_fk on public.held_child", Phase: schema.PostData, Schema: "public",
		Table: schema.QualifiedName{Schema: "public", Name: "held_child"},
		ForeignKey: &schema.ForeignKey{Name: "held_fk", Table: schema.QualifiedName{Schema: "public", Name: "held_child"}, Columns: []string{"id"},
			RefTable: schema.QualifiedName{Schema: "public", Name: "held_parent"}, RefColumns: []string{"id"}, OnUpdate: "NO ACTION", OnDelete: "NO ACTION",
			Match: "SIMPLE", Validated: true}}

	db := my.Open(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"XA START 'held_by_test'", "INSERT INTO held_child VALUES (1, 'one', NULL)", "XA END 'held_by_test'", "XA PREPARE 'held_by_test'"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// MariaDB keeps a prepared transaction with its session until the
	// session ends: rolled back in it.
	ended := false
	rollback := func() {
		if !ended {
			ended = true
			if _, err := conn.ExecContext(context.Background(), "XA ROLLBACK 'held_by_test'"); err != nil {
				t.Errorf("XA ROLLBACK: %v", err)
			}
			conn.Close()
		}
	}
	t.Cleanup(rollback)

	start := time.Now()
	got, err := s.CarryObjects(ctx, schema.PostData, []*schema.Object{fk})
	if err != nil {
		t.Fatalf("CarryObjects while a prepared transaction holds the table: %v", err)
	}
	if got[0].State != sink.ObjectLeftOut || !strings.Contains(got[0].Reason, "waited 10 s for a lock") {
		t.Fatalf("the foreign key on a table a prepared transaction holds: %+v, want left out, saying it waited", got[0])
	}
	t.Logf("left out after %v", time.Since(start).Round(time.Millisecond))
	rollback()
	got, err = s.CarryObjects(ctx, schema.PostData, []*schema.Object{fk})
	if err != nil || got[0].State != sink.ObjectCreated {
		t.Fatalf("the foreign key once the transaction is over: %+v, %v", got, err)
	}
	wantMyQuery(t, my, "held_child", "SELECT TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND CONSTRAINT_NAME = 'held_fk'")
}
