package apply

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// A table whose copy was redone under a later snapshot skips the changes of
// transactions that committed before that snapshot; other tables get them all.
func TestTableSyncLSNSkipsChangesInTheCopy(t *testing.T) {
	cfg := testConfig(t)
	cfg.GroupMaxRows = 1
	cfg.TableSyncLSN = func(tb *schema.Table) source.LSN {
		if tb.Name == "t2" {
			return 0x200
		}
		return 0
	}
	h := newHarness(t, cfg, applytest.New(0))
	h.expect("setup s1", "prepared-gids pgrelay_s1_")
	// t2's Relation message is of before its snapshot, whose definition its
	// target table has already: only t1's reaches the sink.
	h.feed(0x100, rel(1, "v"), rel(2, "v"))
	h.expect("ensure " + t1 + " prev=nil")
	// Committed before t2's snapshot: t1 gets the row, t2 has it in its copy.
	h.feed(0x101, begin(1, 0x110), ins(1, "1", "a"), ins(2, "1", "a"), commit(0x110, 0x118))
	h.expect("begin", "insert public.t1 (1,a)", "commit 0/118")
	// A truncate of both before the snapshot reaches t1 only.
	h.feed(0x120, begin(2, 0x130), &source.Truncate{RelationIDs: []uint32{1, 2}}, commit(0x130, 0x138))
	h.expect("begin", "truncate public.t1 options=0", "commit 0/138")
	// Committed at or after t2's snapshot: both tables get it.
	h.feed(0x201, begin(3, 0x210), ins(1, "2", "b"), ins(2, "2", "b"), commit(0x210, 0x218))
	h.expect("begin", "insert public.t1 (2,b)", "insert public.t2 (2,b)", "commit 0/218")
	h.noProblems()
}

// A transaction prepared before t2's redo snapshot is in the copy only if it
// also committed before the snapshot: its transaction id tells. Prepared
// transactions the snapshot does not see get their changes to t2 applied.
func TestTableSyncSnapshotJudgesPreparedByXid(t *testing.T) {
	cfg := testConfig(t)
	cfg.TwoPhase = true
	// Transaction 7 committed before the snapshot (visible), 9 was prepared
	// but not committed then (in xip).
	syncT2(t, &cfg, "5:20:9")
	h := newHarness(t, cfg, applytest.New(0))
	h.feed(0x100, rel(1, "v"), rel(2, "v"))
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil")
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), ins(2, "70", "p"), prepare(7, 0x200))
	h.expect("begin", "insert public.t1 (70,p)", "prepare pgrelay_s1_7 0/208")
	h.feed(0x2f0, beginPrepare(9, 0x300), ins(1, "90", "q"), ins(2, "90", "q"), prepare(9, 0x300))
	h.expect("begin", "insert public.t1 (90,q)", "insert public.t2 (90,q)", "prepare pgrelay_s1_9 0/308")
	// Without the snapshot's ids, a prepare before the sync LSN is skipped.
	cfg2 := cfg
	cfg2.TableSyncSnapshot = nil
	h2 := newHarness(t, cfg2, applytest.New(0))
	h2.feed(0x100, rel(1, "v"), rel(2, "v"))
	h2.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil")
	h2.feed(0x2f0, beginPrepare(9, 0x300), ins(2, "90", "q"), prepare(9, 0x300))
	h2.expect("begin", "prepare pgrelay_s1_9 0/308")
	h.noProblems()
	h2.noProblems()
}

// A snapshot taken without a slot has no exact LSN: a transaction whose
// commit record comes before the LSN read after it may still be one the
// snapshot does not see. Its transaction id tells, for plain and streamed
// transactions as for prepared ones.
func TestTableSyncSnapshotJudgesEveryTransactionByXid(t *testing.T) {
	cfg := testConfig(t)
	cfg.GroupMaxRows = 1
	// 7 committed before the snapshot; 9 and 11 were running when it was taken.
	syncT2(t, &cfg, "5:20:9,11")
	h := newHarness(t, cfg, applytest.New(0))
	h.feed(0x100, rel(1, "v"), rel(2, "v"))
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil")
	h.feed(0x101, begin(7, 0x110), ins(1, "70", "a"), ins(2, "70", "a"), commit(0x110, 0x118))
	h.expect("begin", "insert public.t1 (70,a)", "commit 0/118")
	h.feed(0x201, begin(9, 0x210), ins(1, "90", "b"), ins(2, "90", "b"), commit(0x210, 0x218))
	h.expect("begin", "insert public.t1 (90,b)", "insert public.t2 (90,b)", "commit 0/218")
	h.feed(0x300, &source.StreamStart{Xid: 11, FirstSegment: true}, sins(11, 2, "110", "c"), &source.StreamStop{})
	h.feed(0x310, &source.StreamCommit{Xid: 11, CommitLSN: 0x310, EndLSN: 0x318})
	h.expect("begin", "insert public.t2 (110,c)", "commit 0/318")
	h.noProblems()
}

// countingFacts counts the source catalog reads.
type countingFacts struct {
	applytest.NoFacts
	reads int
}

func (f *countingFacts) TableFacts(ctx context.Context, schemaName, table string) (schema.TableFacts, error) {
	f.reads++
	return f.NoFacts.TableFacts(ctx, schemaName, table)
}

// After a relcache invalidation (a TRUNCATE of a partitioned table, then its
// refill) PostgreSQL sends a Relation message before nearly every change of a
// transaction; each read the source catalog again, about a millisecond each.
// The same message again in the same transaction reads nothing; a changed one,
// or the same in the next transaction, does.
func TestRepeatedRelationMessageReadsCatalogOnce(t *testing.T) {
	facts := &countingFacts{}
	h := newHarnessFacts(t, testConfig(t), applytest.New(0), facts)
	h.feed(0x100, &source.StreamStart{Xid: 10, FirstSegment: true})
	for i := range 50 {
		r := rel(1, "v")
		r.Xid = 10
		h.feed(0x101+source.LSN(i), r, sins(10, 1, fmt.Sprint(i), "x"))
	}
	h.feed(0x200, &source.StreamStop{}, &source.StreamCommit{Xid: 10, CommitLSN: 0x200, EndLSN: 0x208})
	h.flush()
	if facts.reads != 1 {
		t.Errorf("50 identical Relation messages in one transaction read the catalog %d times, want 1", facts.reads)
	}
	h.feed(0x300, begin(11, 0x310), rel(1, "v"), ins(1, "100", "y"), rel(1, "v", "w"), ins(1, "101", "y", "z"), commit(0x310, 0x318))
	h.flush()
	if facts.reads != 3 {
		t.Errorf("after the next transaction's two different messages: %d catalog reads, want 3", facts.reads)
	}
	h.noProblems()
}

// syncT2 makes t2 a table copied under a later snapshot than the slot's:
// taken at 0x400, with transaction ids snap (txid_current_snapshot form).
func syncT2(t *testing.T, cfg *Config, snap string) {
	t.Helper()
	cfg.TableSyncLSN = func(tb *schema.Table) source.LSN {
		if tb.Name == "t2" {
			return 0x400
		}
		return 0
	}
	ids, err := source.ParseTxidSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TableSyncSnapshot = func(tb *schema.Table) (source.TxidSnapshot, bool) { return ids, tb.Name == "t2" }
}
