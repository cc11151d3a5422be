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
	my := harness.MariaDB(b)
	s, err := mysql.New(b.Context(), my.URL(), mysql.Options{})
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

func BenchmarkSinkMySQLUpdates(b *testing.B) {
	_, s, tb := benchMySQL(b)
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
