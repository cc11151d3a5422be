package schema

import "testing"

func TestBinaryCopyType(t *testing.T) {
	for _, c := range []struct {
		oid  uint32
		want string
	}{
		{16, "bool"}, {18, "char"}, {23, "int4"}, {1007, "_int4"}, {1042, "bpchar"},
		{1014, "_bpchar"}, {1700, "numeric"}, {1184, "timestamptz"}, {1186, "interval"},
		{790, "money"}, {3802, "jsonb"}, {3807, "_jsonb"}, {17, "bytea"}, {1560, "bit"},
	} {
		if got, ok := BinaryCopyType(c.oid); !ok || got != c.want {
			t.Errorf("BinaryCopyType(%d) = %q, %v; want %q", c.oid, got, ok, c.want)
		}
	}
	for oid, what := range map[uint32]string{
		24: "regproc", 2205: "regclass", 2206: "regtype", 2210: "regclass[]", 4089: "regnamespace",
		142: "xml", 143: "xml[]", 600: "point", 3614: "tsvector", 3904: "int4range",
		4451: "int4multirange", 2249: "record", 28: "xid", 16384: "the first user OID",
		50000: "an enum, domain or composite",
	} {
		if name, ok := BinaryCopyType(oid); ok {
			t.Errorf("BinaryCopyType(%d) = %q: %s must go as text", oid, name, what)
		}
	}
	// Every listed array is the array of a listed element, by the catalog's
	// own element map, and named after it.
	arrays := 0
	for oid, name := range binaryCopyTypes {
		elem, isArray := builtinArrayElems[oid]
		if !isArray {
			continue
		}
		arrays++
		elemName, ok := binaryCopyTypes[elem]
		if !ok || name != "_"+elemName {
			t.Errorf("array %d (%s): element %d is %q, %v", oid, name, elem, elemName, ok)
		}
	}
	if arrays != len(binaryCopyTypes)/2 {
		t.Errorf("%d arrays among %d types: every listed type's array is listed", arrays, len(binaryCopyTypes))
	}
}

func TestBinaryCopyBetween(t *testing.T) {
	for _, c := range []struct {
		oid          uint32
		source, dest int
		want         bool
	}{
		{23, 18, 14, true},
		{23, 0, 0, true},
		{2205, 15, 15, false},
		{1186, 16, 15, true},  // no infinite intervals on 16
		{1186, 17, 17, true},  // the target knows them
		{1186, 18, 16, false}, // 16 would take infinity for a finite interval
		{1187, 17, 15, false},
		{1186, 0, 16, false}, // unknown source: maybe 17+
		{1186, 0, 17, true},
		{1700, 14, 13, false},
		{1231, 13, 12, true},
		{1700, 18, 15, true},
	} {
		if got := BinaryCopyBetween(c.oid, c.source, c.dest); got != c.want {
			t.Errorf("BinaryCopyBetween(%d, %d, %d) = %v, want %v", c.oid, c.source, c.dest, got, c.want)
		}
	}
}
