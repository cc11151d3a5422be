package source

import (
	"slices"
	"testing"
)

// TestPartitionLevelChanges: copied partitions now published through their
// root, and a copied root whose partitions are now published as tables of
// their own, are named, by OID where it is known and by name where it is not;
// a table published as it was copied, or whose other level was never copied,
// is not.
func TestPartitionLevelChanges(t *testing.T) {
	root := func(oid uint32, name string, parts ...Part) PublishedTable {
		return PublishedTable{Relation: &Relation{RelationID: oid, Namespace: "public", Name: name}, Partitioned: true, Parts: parts}
	}
	leaf := func(oid uint32, name string, ancestors ...Part) PublishedTable {
		return PublishedTable{Relation: &Relation{RelationID: oid, Namespace: "public", Name: name}, Ancestors: ancestors}
	}
	p := Part{OID: 10, Schema: "public", Name: "p"}
	low, high := Part{OID: 11, Schema: "public", Name: "p_low"}, Part{OID: 12, Schema: "public", Name: "p_high"}
	mid := Part{OID: 13, Schema: "public", Name: "p_mid"}
	copiedOIDs := func(oids ...uint32) func(uint32, string) bool {
		return func(oid uint32, _ string) bool { return slices.Contains(oids, oid) }
	}
	for _, c := range []struct {
		name      string
		published []PublishedTable
		copied    func(uint32, string) bool
		want      []string
	}{
		{"root as copied", []PublishedTable{root(10, "p", high, low)}, copiedOIDs(10), nil},
		{"leaves as copied", []PublishedTable{leaf(11, "p_low", p), leaf(12, "p_high", p)}, copiedOIDs(11, 12), nil},
		{"switched on", []PublishedTable{root(10, "p", high, low)}, copiedOIDs(11, 12), []string{
			"public.p_high, public.p_low (copied as tables of their own; now published through their root public.p, publish_via_partition_root being on: drop their target tables, which would keep stale rows)"}},
		{"switched on, one leaf copied", []PublishedTable{root(10, "p", high, low)}, copiedOIDs(11), []string{
			"public.p_low (copied as tables of their own; now published through their root public.p, publish_via_partition_root being on: drop their target tables, which would keep stale rows)"}},
		{"switched off", []PublishedTable{leaf(12, "p_high", p), leaf(11, "p_low", p)}, copiedOIDs(10), []string{
			"public.p (copied through its root under publish_via_partition_root; now its partitions public.p_high, public.p_low are published as tables of their own: drop its target table, which would keep stale rows)"}},
		{"switched off, two levels", []PublishedTable{leaf(11, "p_low", mid, p)}, copiedOIDs(10), []string{
			"public.p (copied through its root under publish_via_partition_root; now its partitions public.p_low are published as tables of their own: drop its target table, which would keep stale rows)"}},
		{"by name", []PublishedTable{leaf(11, "p_low", p)}, func(oid uint32, name string) bool { return name == "public.p" }, []string{
			"public.p (copied through its root under publish_via_partition_root; now its partitions public.p_low are published as tables of their own: drop its target table, which would keep stale rows)"}},
		{"a partition published on its own", []PublishedTable{leaf(11, "p_low", p)}, copiedOIDs(11), nil},
		{"plain tables", []PublishedTable{leaf(20, "t"), root(21, "empty")}, copiedOIDs(20, 21), nil},
	} {
		if got := PartitionLevelChanges(c.published, c.copied); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
