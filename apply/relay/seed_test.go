package relay

import (
	"context"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/sink"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// TestTableSyncsOf: a table's later copy snapshot is found by its OID under
// any name; a name alone finds it for entries stored without an OID, and for a
// relation dropped on the source that had the copied table's name, never for
// one that still exists.
func TestTableSyncsOf(t *testing.T) {
	s := newTableSyncs()
	s.add(10, "public.b", tableSync{lsn: 100})
	s.add(0, "public.legacy", tableSync{lsn: 200})
	// An older copy of table 10, under the name it had: the later holds.
	s.add(10, "public.a", tableSync{lsn: 50})
	gone := map[uint32]bool{30: true}
	asked := 0
	dropped := func(relid uint32) bool { asked++; return gone[relid] }
	for _, tt := range []struct {
		oid  uint32
		name string
		want source.LSN
	}{
		{10, "public.a", 100},      // renamed since the copy: by OID
		{10, "public.b", 100},      // its own name
		{20, "public.b", 0},        // another table, still there, had the name before
		{30, "public.b", 100},      // a table dropped since, that had the name
		{40, "public.legacy", 200}, // stored without an OID: by name
		{40, "public.other", 0},
	} {
		if got := s.of(&schema.Table{RelationID: tt.oid, Schema: "public", Name: strings.TrimPrefix(tt.name, "public.")}, dropped).lsn; got != tt.want {
			t.Errorf("relation %d %s: sync LSN %s, want %s", tt.oid, tt.name, got, tt.want)
		}
	}
	if asked != 2 {
		t.Errorf("asked whether a relation was dropped %d times, want 2 (only for another OID under a copied name)", asked)
	}
	if newTableSyncs().empty() != true || s.empty() {
		t.Errorf("empty() wrong")
	}
}

// TestSeedDecisions: what a start does, from PGRELAY_SNAPSHOT, the slot and
// the seed record the target holds (read through the sink).
func TestSeedDecisions(t *testing.T) {
	const slot = "s"
	unseeded := func(*applytest.Sink) {}
	seeded := func(s *applytest.Sink) {
		s.SetSeed(sink.Seed{Slot: slot, ConsistentPoint: 0x100, SnapshotDone: true})
	}
	interrupted := func(s *applytest.Sink) {
		s.SetSeed(sink.Seed{Slot: slot, ConsistentPoint: 0x100})
		ctx := context.Background()
		_ = s.SetTableState(ctx, slot, sink.TableState{Schema: "public", Name: "a", State: sink.TableIndexed})
		_ = s.SetTableState(ctx, slot, sink.TableState{Schema: "public", Name: "b", State: sink.TableCopying})
		_ = s.SetTableState(ctx, slot, sink.TableState{Schema: "public", Name: "c", State: sink.TableIndexed, RelationID: 7,
			SyncLSN: 0x200, SyncSnapshot: "10:12:11"})
	}
	exists := source.SlotState{Exists: true, ConfirmedFlushLSN: 0x100}
	active := source.SlotState{Exists: true, Active: true, ActivePID: 42}
	for _, c := range []struct {
		name     string
		snapshot string
		target   func(*applytest.Sink)
		slot     source.SlotState
		want     seedAction
		err      string
	}{
		{"auto, seeded", "auto", seeded, exists, seedStream, ""},
		{"auto, never seeded", "auto", unseeded, source.SlotState{}, seedFresh, ""},
		{"auto, a slot without a seed", "auto", unseeded, exists, seedFresh, ""},
		{"auto, interrupted", "auto", interrupted, exists, seedResume, ""},
		{"auto, interrupted, slot gone", "auto", interrupted, source.SlotState{}, 0, "is gone but the copy of the tables into the target did not finish"},
		{"always, seeded", "always", seeded, exists, seedFresh, ""},
		{"always, slot in use", "always", seeded, active, 0, "is in use: a client streams from it through walsender pid 42"},
		{"never, seeded", "never", seeded, exists, seedStream, ""},
		{"never, never seeded", "never", unseeded, source.SlotState{}, seedWithoutCopy, ""},
		{"never, interrupted copy", "never", interrupted, exists, seedStream, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tgt := applytest.New(0)
			c.target(tgt)
			s := &seeder{cfg: &Config{Slot: slot, Snapshot: c.snapshot}, tgt: tgt, slot: c.slot}
			d, err := s.decide(t.Context())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.action != c.want {
				t.Fatalf("action %d, want %d", d.action, c.want)
			}
			if d.action != seedResume {
				return
			}
			// The copy goes on with the tables not done; the one redone
			// under a later snapshot is found by OID under any name.
			if !d.done["public.a"] || d.done["public.b"] || !d.done["public.c"] {
				t.Errorf("done %v, want public.a and public.c", d.done)
			}
			ts := d.syncs.of(&schema.Table{RelationID: 7, Schema: "public", Name: "renamed"}, func(uint32) bool { return false })
			if ts.lsn != 0x200 || ts.snap == nil || ts.snap.Xmin != 10 {
				t.Errorf("sync of relation 7: %+v, want 0/200 with its snapshot", ts)
			}
		})
	}
}
