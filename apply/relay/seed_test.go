package relay

import (
	"strings"
	"testing"

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
