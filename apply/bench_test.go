package apply

import (
	"context"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// discardSink measures apply alone: it accepts everything and keeps nothing.
type discardSink struct{ commits int }

type discardTx struct{ s *discardSink }

func (d *discardSink) Setup(context.Context, string) (sink.Progress, error) {
	return sink.Progress{}, nil
}
func (d *discardSink) EnsureTable(context.Context, *schema.Table, *schema.Table) error {
	return nil
}
func (d *discardSink) Begin(context.Context) (sink.Tx, error)            { return discardTx{d}, nil }
func (d *discardSink) Close(context.Context) error                       { return nil }
func (discardTx) Apply(context.Context, *sink.Change) error              { return nil }
func (discardTx) Truncate(context.Context, []*schema.Table, uint8) error { return nil }
func (t discardTx) Commit(context.Context, sink.Progress) error          { t.s.commits++; return nil }
func (discardTx) Rollback(context.Context) error                         { return nil }

func benchApplier(b *testing.B, cfg Config) (*Applier, context.Context) {
	ctx := context.Background()
	a, err := New(cfg, &discardSink{}, schema.NewCatalog(applytest.NoFacts{}), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(ctx) })
	if _, err := a.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := a.Handle(ctx, 1, rel(1, "v")); err != nil {
		b.Fatal(err)
	}
	return a, ctx
}

// BenchmarkApplyInsert is Handle's throughput for plain transactions of 10
// inserts of a two-column row, grouped: one op is one insert.
func BenchmarkApplyInsert(b *testing.B) {
	a, ctx := benchApplier(b, Config{Slot: "bench", SpillDir: b.TempDir()})
	row := ins(1, "12345", "some text value of moderate length")
	lsn := source.LSN(0x1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 10 {
		if err := a.Handle(ctx, lsn, &source.Begin{Xid: uint32(i), FinalLSN: lsn}); err != nil {
			b.Fatal(err)
		}
		for range 10 {
			if err := a.Handle(ctx, lsn, row); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.Handle(ctx, lsn+8, &source.Commit{CommitLSN: lsn, EndLSN: lsn + 8}); err != nil {
			b.Fatal(err)
		}
		lsn += 0x10
	}
}

// BenchmarkApplyStreamed is the same rows through a streamed transaction of
// 10000 rows (buffered, then replayed).
func BenchmarkApplyStreamed(b *testing.B) {
	a, ctx := benchApplier(b, Config{Slot: "bench", SpillDir: b.TempDir()})
	row := sins(7, 1, "12345", "some text value of moderate length")
	lsn := source.LSN(0x1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 10000 {
		xid := uint32(i + 1)
		row.Xid = xid
		if err := a.Handle(ctx, lsn, &source.StreamStart{Xid: xid, FirstSegment: true}); err != nil {
			b.Fatal(err)
		}
		for range 10000 {
			if err := a.Handle(ctx, lsn, row); err != nil {
				b.Fatal(err)
			}
		}
		for _, m := range []source.Message{&source.StreamStop{}, &source.StreamCommit{Xid: xid, CommitLSN: lsn, EndLSN: lsn + 8}} {
			if err := a.Handle(ctx, lsn, m); err != nil {
				b.Fatal(err)
			}
		}
		lsn += 0x10
	}
}
