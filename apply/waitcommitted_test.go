package apply

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// waitingCatalog records the transactions it was asked to wait for, in order
// with the relations it installed.
type waitingCatalog struct {
	*schema.Catalog
	log *[]string
}

func (c waitingCatalog) WaitCommitted(_ context.Context, xid uint32) error {
	*c.log = append(*c.log, fmt.Sprintf("wait %d", xid))
	return nil
}

func (c waitingCatalog) Apply(ctx context.Context, rel *source.Relation) (*schema.Table, *schema.Table, bool, error) {
	*c.log = append(*c.log, "apply "+rel.Name)
	return c.Catalog.Apply(ctx, rel)
}

// Facts for a Relation are read only once its transaction is visible on the
// source: plain transactions and streamed ones at replay.
func TestRelationWaitsForItsTransaction(t *testing.T) {
	var log []string
	cat := waitingCatalog{schema.NewCatalog(applytest.NoFacts{}), &log}
	a, err := New(testConfig(t), applytest.New(0), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	feed := func(lsn source.LSN, msgs ...source.Message) {
		t.Helper()
		for _, m := range msgs {
			if err := a.Handle(ctx, lsn, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed(0x100, begin(7, 0x110), rel(1, "v"), ins(1, "1", "a"), commit(0x110, 0x118))
	r2 := rel(2, "v")
	r2.Xid = 9
	feed(0x200, &source.StreamStart{Xid: 9, FirstSegment: true}, r2, sins(9, 2, "1", "a"), &source.StreamStop{})
	if want := "wait 7,apply t1"; fmt.Sprint(log) != "[wait 7 apply t1]" {
		t.Fatalf("log %v, want %s (nothing for the streamed one before its commit)", log, want)
	}
	feed(0x300, &source.StreamCommit{Xid: 9, CommitLSN: 0x300, EndLSN: 0x308})
	if fmt.Sprint(log) != "[wait 7 apply t1 wait 9 apply t2]" {
		t.Fatalf("log %v", log)
	}
	// Once per transaction: ended, it stays ended.
	log = nil
	feed(0x400, begin(11, 0x410), rel(3, "v"), ins(3, "1", "a"), rel(4, "v"), ins(4, "1", "a"), commit(0x410, 0x418))
	if fmt.Sprint(log) != "[wait 11 apply t3 apply t4]" {
		t.Fatalf("log %v, want one wait for transaction 11", log)
	}
}
