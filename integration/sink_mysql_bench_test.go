package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

func benchMySQL(b *testing.B) (*harness.MY, *mysql.Sink, *schema.Table) {
	return benchMySQLWith(b, mysql.Options{})
}

func benchMySQLWith(b *testing.B, opts mysql.Options) (*harness.MY, *mysql.Sink, *schema.Table) {
	my := harness.MariaDB(b)
	s, err := mysql.New(b.Context(), my.URL(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	if _, err := s.Setup(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	tb := sinktest.ItemsTable("public", "bench")
	if err := s.EnsureTable(b.Context(), tb, nil); err != nil {
		b.Fatal(err)
	}
	return my, s, tb
}

// benchMySQLApply applies n changes made by mk in transactions of txSize.
func benchMySQLApply(b *testing.B, s sink.Sink, n, txSize int, mk func(i int) *sink.Change) {
	ctx := b.Context()
	b.ResetTimer()
	for start := 0; start < n; start += txSize {
		tx, err := s.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := start; i < min(start+txSize, n); i++ {
			if err := tx.Apply(ctx, mk(i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx, sink.Progress{Slot: "bench", LSN: source.LSN(start + txSize)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkSinkMySQLInserts(b *testing.B) {
	_, s, tb := benchMySQL(b)
	benchMySQLApply(b, s, b.N, 10000, func(i int) *sink.Change { return sinktest.Ins(tb, source.LSN(i), benchRow(i, "inserted")) })
}

func BenchmarkSinkMySQLUpdates(b *testing.B) { benchMySQLUpdates(b, mysql.Options{}) }

func benchMySQLUpdates(b *testing.B, opts mysql.Options) {
	_, s, tb := benchMySQLWith(b, opts)
	const rows = 100000
	var data strings.Builder
	for i := range rows {
		fmt.Fprintf(&data, "%d\tx\ty\n", i)
	}
	if _, err := s.CopyFrom(b.Context(), tb, strings.NewReader(data.String())); err != nil {
		b.Fatal(err)
	}

	benchMySQLApply(b, s, b.N, 10000, func(i int) *sink.Change {
		return sinktest.Upd(tb, source.LSN(i), sinktest.Row(sinktest.T(fmt.Sprint(i%rows)), sinktest.T(fmt.Sprint("updated ", i)), sinktest.U()))
	})
}

func BenchmarkSinkMySQLDeletes(b *testing.B) {
	_, s, tb := benchMySQL(b)
	var data strings.Builder
	for i := range b.N {
		fmt.Fprintf(&data, "%d\tx\ty\n", i)
	}
	if _, err := s.CopyFrom(b.Context(), tb, strings.NewReader(data.String())); err != nil {
		b.Fatal(err)
	}
	benchMySQLApply(b, s, b.N, 10000, func(i int) *sink.Change {
		return sinktest.Del(tb, source.LSN(i), source.OldKey, sinktest.Row(sinktest.T(fmt.Sprint(i)), sinktest.N(), sinktest.N()))
	})
}

// BenchmarkSinkMySQLLoadData: the snapshot copy's path.
func BenchmarkSinkMySQLLoadData(b *testing.B) {
	_, s, tb := benchMySQL(b)
	var data strings.Builder
	for i := range b.N {
		fmt.Fprintf(&data, "%d\tname %d\tsome note text that is not short\n", i, i)
	}
	b.ResetTimer()
	if _, err := s.CopyFrom(b.Context(), tb, strings.NewReader(data.String())); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchMySQLPgbench applies b.N pgbench-like transactions (an update of an
// account, a teller and a branch, an insert into history) in target
// transactions of 1000 of them, as group commit makes of a backlog.
func benchMySQLPgbench(b *testing.B, opts mysql.Options) {
	my := harness.MariaDB(b)
	s, err := mysql.New(b.Context(), my.URL(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	if _, err := s.Setup(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	acc, tel, bra, hist := pgbenchTables()
	for _, tb := range []*schema.Table{acc, tel, bra, hist} {
		if err := s.EnsureTable(b.Context(), tb, nil); err != nil {
			b.Fatal(err)
		}
	}
	const accounts, tellers, branches = 100000, 200, 20
	for _, t := range []struct {
		tb *schema.Table
		n  int
	}{{acc, accounts}, {tel, tellers}, {bra, branches}} {
		var data strings.Builder
		for i := range t.n {
			fmt.Fprintf(&data, "%d\t0\n", i)
		}
		if _, err := s.CopyFrom(b.Context(), t.tb, strings.NewReader(data.String())); err != nil {
			b.Fatal(err)
		}
	}
	rows := 4 * b.N
	row := func(vals ...int) source.Tuple {
		t := make(source.Tuple, len(vals))
		for i, v := range vals {
			t[i] = sinktest.T(fmt.Sprint(v))
		}
		return t
	}
	benchMySQLApply(b, s, rows, 4000, func(i int) *sink.Change {
		txn, op := i/4, i%4
		switch op {
		case 0:
			return sinktest.Upd(acc, source.LSN(i), row(txn*7919%accounts, txn))
		case 1:
			return sinktest.Upd(tel, source.LSN(i), row(txn%tellers, txn))
		case 2:
			return sinktest.Upd(bra, source.LSN(i), row(txn%branches, txn))
		}
		return sinktest.Ins(hist, source.LSN(i), row(txn, txn%tellers, txn))
	})
}

// BenchmarkSinkMySQLPgbench: the queues (changes table by table, runs of
// updates as one statement, repeated updates folded).
func BenchmarkSinkMySQLPgbench(b *testing.B) { benchMySQLPgbench(b, mysql.Options{}) }

// BenchmarkSinkMySQLPgbenchKeepOrder: arrival order, one statement per update.
func BenchmarkSinkMySQLPgbenchKeepOrder(b *testing.B) {
	benchMySQLPgbench(b, mysql.Options{KeepOrder: true})
}

// BenchmarkSinkMySQLUpdatesKeepOrder is BenchmarkSinkMySQLUpdates one
// statement per update.
func BenchmarkSinkMySQLUpdatesKeepOrder(b *testing.B) {
	benchMySQLUpdates(b, mysql.Options{KeepOrder: true})
}
