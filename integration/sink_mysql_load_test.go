package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
)

// TestSinkMySQLLoadData: the snapshot copy's COPY text goes in through LOAD
// DATA LOCAL INFILE, each value converted as in apply; what LOAD DATA would
// only warn about (a duplicate, a bad value) fails the load, naming the table,
// and leaves nothing; tables load in parallel.
func TestSinkMySQLLoadData(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	ctx := t.Context()
	tb := typesTable()
	ensure(t, s, tb)
	row := "1\tt\t9223372036854775807\t3.4028235e+38\t1.5\t-0.5\t12.34\ttab\\there \\\\ 'q' 🎉\tab  \t\\\\x00ff0a5c\t1000-01-01\t24:00:00\t2000-01-01 00:00:00\t2024-05-06 07:08:09.5+05:30\t" +
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t{\"a\": [1, \"x\\\\ty\"]}\t{{1,2},{NULL,4}}\t{a,\"b c\"}\t1 day\n"
	// 24:00:00 does not fit a MySQL TIME: the load fails, naming table and column.
	_, err := s.CopyFrom(ctx, tb, strings.NewReader(row))
	if err == nil || !strings.Contains(err.Error(), "typed") || !strings.Contains(err.Error(), `"tm"`) || !strings.Contains(err.Error(), "row 1 of the copy") {
		t.Fatalf("24:00:00 in a load: %v", err)
	}
	row = strings.Replace(row, "24:00:00", "23:59:59.5", 1)
	n, err := s.CopyFrom(ctx, tb, strings.NewReader(row+"2\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\t\\N\t\\\\x\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t{}\t\\N\t\\N\n"))
	if err != nil || n != 2 {
		t.Fatalf("CopyFrom: %d rows, %v", n, err)
	}
	for expr, want := range map[string]string{
		"b": "1", "f4 = CAST(3.4028234663852886e+38 AS FLOAT)": "1", "n52": "12.34", "t": "tab\there \\ 'q' 🎉", "ch": "ab",
		"HEX(`by`)": "00FF0A5C", "tm": "23:59:59.500000", "tz": "2024-05-06 01:38:09.500000", "j": `{"a": [1, "x\ty"]}`,
		"ia": "[[1,2],[null,4]]", "ta": `["a","b c"]`, "iv": "1 day",
	} {
		if !strings.ContainsAny(expr, "` =(") {
			expr = "`" + expr + "`"
		}
		wantMyQuery(t, my, want, "SELECT "+expr+" FROM typed WHERE id = 1")
	}
	wantMyQuery(t, my, "|0", "SELECT CONCAT_WS('|', t, LENGTH(`by`)) FROM typed WHERE id = 2")
	wantMyQuery(t, my, "[]", "SELECT ia FROM typed WHERE id = 2")

	// A duplicate is only a warning to LOAD DATA LOCAL: here it fails the
	// whole load, and the rows before it are not kept.
	items := sinktest.ItemsTable("public", "loaded")
	ensure(t, s, items)
	var data strings.Builder
	for i := range 500 {
		fmt.Fprintf(&data, "%d\tname %d\t\\N\n", i, i)
	}
	if _, err := s.CopyFrom(ctx, items, strings.NewReader(data.String())); err != nil {
		t.Fatal(err)
	}
	_, err = s.CopyFrom(ctx, items, strings.NewReader("1000\tnew\t\\N\n7\tdup\t\\N\n"))
	if err == nil || !strings.Contains(err.Error(), "loaded") || !strings.Contains(err.Error(), "Duplicate entry") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a duplicate in a load: %v", err)
	}
	wantMyQuery(t, my, "500", "SELECT COUNT(*) FROM loaded")
	// A value MariaDB would warn about and store changed.
	_, err = s.CopyFrom(ctx, items, strings.NewReader("2000\t"+strings.Repeat("x", 10)+"\t\\N\nnot a number\ty\t\\N\n"))
	if err == nil || !strings.Contains(err.Error(), "loaded") || errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("a bad value in a load: %v", err)
	}
	wantMyQuery(t, my, "500", "SELECT COUNT(*) FROM loaded")

	// Several tables at once.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for k := range 4 {
		tbk := sinktest.ItemsTable("public", fmt.Sprintf("par_%d", k))
		ensure(t, s, tbk)
		wg.Go(func() {
			var b strings.Builder
			for i := range 2000 {
				fmt.Fprintf(&b, "%d\tt%d\t\\N\n", i, k)
			}
			_, errs[k] = s.CopyFrom(ctx, tbk, strings.NewReader(b.String()))
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("parallel load %d: %v", k, err)
		}
		wantMyQuery(t, my, "2000", fmt.Sprintf("SELECT COUNT(*) FROM par_%d", k))
	}
	// Secondary indexes after the data, as MySQL can have them; again is a no-op.
	defs := []string{`CREATE INDEX loaded_name ON public.loaded USING btree (name)`,
		`CREATE UNIQUE INDEX loaded_id_name ON public.loaded USING btree (id DESC)`,
		`CREATE INDEX loaded_lower ON public.loaded USING btree (lower(name))`}
	for range 2 {
		if err := s.CreateIndexes(ctx, items, defs); err != nil {
			t.Fatal(err)
		}
	}
	wantMyQuery(t, my, "loaded_id_name:0,loaded_name:1", `SELECT GROUP_CONCAT(DISTINCT CONCAT(INDEX_NAME, ':', NON_UNIQUE) ORDER BY INDEX_NAME)
		FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'loaded' AND INDEX_NAME <> 'PRIMARY'`)
	// Empty, as before a copy is redone.
	if err := s.Empty(ctx, items); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM loaded")
}

// TestSinkMySQLLoadWithoutLocalInfile: a server with local_infile off still
// takes the copy, through multi-row INSERTs, with a warning that says how to
// make it faster.
func TestSinkMySQLLoadWithoutLocalInfile(t *testing.T) {
	my, _ := myTarget(t, mysql.Options{})
	my.Exec(t, "SET GLOBAL local_infile = 0")
	t.Cleanup(func() { my.Exec(t, "SET GLOBAL local_infile = 1") })
	var logs syncBuffer
	s, err := mysql.New(t.Context(), my.URL(), mysql.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), BatchBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	my.Exec(t, "SET GLOBAL local_infile = 1")
	items := sinktest.ItemsTable("public", "inserted")
	ensure(t, s, items)
	var data strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&data, "%d\tname\\t%d\t\\N\n", i, i)
	}
	n, err := s.CopyFrom(t.Context(), items, strings.NewReader(data.String()))
	if err != nil || n != 3000 {
		t.Fatalf("CopyFrom: %d, %v", n, err)
	}
	wantMyQuery(t, my, "3000", "SELECT COUNT(*) FROM inserted")
	wantMyQuery(t, my, "name\t2999", "SELECT name FROM inserted WHERE id = 2999")
	if !logHas(logs.String(), []string{"level=WARN", "local_infile off", "SET GLOBAL local_infile = 1"}) {
		t.Errorf("no warning about local_infile:\n%s", logs.String())
	}
	_, err = s.CopyFrom(t.Context(), items, strings.NewReader("5000\tx\t\\N\n7\tdup\t\\N\n"))
	if err == nil || !strings.Contains(err.Error(), "inserted") || !strings.Contains(err.Error(), "Duplicate entry") {
		t.Fatalf("a duplicate: %v", err)
	}
	wantMyQuery(t, my, "3000", "SELECT COUNT(*) FROM inserted")
}
