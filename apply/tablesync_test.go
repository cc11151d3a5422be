package apply

import (
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
	h.feed(0x100, rel(1, "v"), rel(2, "v"))
	h.expect("ensure "+t1+" prev=nil", "ensure public.t2(id integer*,v text) prev=nil")
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
