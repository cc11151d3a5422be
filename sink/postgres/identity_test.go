package postgres

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgrelay/pgrelay/schema"
)

func TestAsideName(t *testing.T) {
	none := func(tableName) bool { return false }
	if got := asideName(tableName{"s", "b"}, "dropped", 16652, none); got != (tableName{"s", "b_pgrelay_dropped_16652"}) {
		t.Errorf("short name: %v", got)
	}
	long := strings.Repeat("x", 60)
	if got := asideName(tableName{"s", long}, "dropped", 4294967295, none).name; len(got) != maxIdentifier || !strings.HasSuffix(got, "_pgrelay_dropped_4294967295") {
		t.Errorf("long name: %q (%d bytes), want 63 bytes ending in the suffix", got, len(got))
	}
	// Cut at a character boundary: ä is two bytes.
	wide := strings.Repeat("ä", 30)
	got := asideName(tableName{"s", wide}, "moved", 12345, none).name
	if !utf8.ValidString(got) || len(got) > maxIdentifier || !strings.HasSuffix(got, "_pgrelay_moved_12345") {
		t.Errorf("multi-byte name: %q (%d bytes)", got, len(got))
	}
	// Taken names get a number.
	taken := func(n tableName) bool { return n.name == "b_pgrelay_dropped_7" || n.name == "b_pgrelay_dropped_7_2" }
	if got := asideName(tableName{"s", "b"}, "dropped", 7, taken).name; got != "b_pgrelay_dropped_7_3" {
		t.Errorf("taken: %q", got)
	}
	longTaken := func(n tableName) bool { return strings.HasSuffix(n.name, "_7") }
	if got := asideName(tableName{"s", long}, "dropped", 7, longTaken).name; len(got) > maxIdentifier || !strings.HasSuffix(got, "_pgrelay_dropped_7_2") {
		t.Errorf("long and taken: %q (%d bytes)", got, len(got))
	}
}

func TestEvict(t *testing.T) {
	at := tableName{"public", "a"}
	b := tableName{"public", "b"}
	c := tableName{"other", "c"}
	render := func(ms []move) string {
		var out []string
		for _, m := range ms {
			s := m.from.plain() + ">" + m.to.plain()
			if m.dropped {
				s += " dropped"
			}
			out = append(out, s)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name          string
		vacated       tableName
		where         *tableName
		taken         []tableName
		before, after string
	}{
		{"dropped on the source", tableName{}, nil, nil, "public.a>public.a_pgrelay_dropped_9 dropped", ""},
		{"swap: its new name is the one being left", b, &b, []tableName{b}, "public.a>public.a_pgrelay_moved_9", "public.a_pgrelay_moved_9>public.b"},
		{"renamed to a free name", tableName{}, &c, nil, "public.a>other.c", ""},
		{"renamed to a name still taken", tableName{}, &c, []tableName{c}, "public.a>public.a_pgrelay_moved_9", ""},
		{"the source catalog is ahead", b, &at, nil, "public.a>public.a_pgrelay_moved_9", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := func(n tableName) bool {
				for _, x := range append(tc.taken, at) {
					if n == x {
						return true
					}
				}
				return false
			}
			before, after := evict(at, tc.vacated, 9, tc.where, taken)
			if got := render(before); got != tc.before {
				t.Errorf("before: %s, want %s", got, tc.before)
			}
			if got := render(after); got != tc.after {
				t.Errorf("after: %s, want %s", got, tc.after)
			}
		})
	}
}

// TestLocations: a relation whose table was moved out of another's way has its
// changes go where the table went (through a temporary name in a swap), until
// its own table is placed again; a rolled-back move is forgotten.
func TestLocations(t *testing.T) {
	a, b, tmp := tableName{"s", "a"}, tableName{"s", "b"}, tableName{"s", "a_pgrelay_moved_7"}
	tA := &schema.Table{RelationID: 7, Schema: "s", Name: "a"} // relation 7's message, still named a
	tB := &schema.Table{RelationID: 8, Schema: "s", Name: "a"} // relation 8 now named a, 7 named b
	l := locations{}
	if got := l.target(tA); got != tA {
		t.Fatalf("nothing moved: target %v, want t itself", got)
	}
	swap := placement{before: []move{{from: a, to: tmp, oid: 7}}, after: []move{{from: tmp, to: b, oid: 7}}}
	undo := l.place(tB, swap)
	if got := l.target(tA); got.Schema != "s" || got.Name != "b" || got.RelationID != 7 || tA.Name != "a" {
		t.Errorf("after the swap: relation 7's changes go to %s.%s (message unchanged: %s), want s.b", got.Schema, got.Name, tA.Name)
	}
	if got := l.target(tB); got != tB {
		t.Errorf("the placed relation's changes go to %s, want its own name", got.QualifiedName())
	}
	l.undo(undo)
	if len(l) != 0 {
		t.Errorf("after undo: %v, want nothing", l)
	}
	l.place(tB, swap)
	tA2 := &schema.Table{RelationID: 7, Schema: "s", Name: "b"}
	l.place(tA2, placement{})
	if got := l.target(tA); got.Name != "a" || len(l) != 0 {
		t.Errorf("relation 7 placed by its own message: %v left, target %s", l, got.QualifiedName())
	}
}
