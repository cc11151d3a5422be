package snapshot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

func table(name string, pages, bytes int64) Table {
	return Table{Table: &schema.Table{Schema: "public", Name: name}, Published: source.PublishedTable{Pages: pages, Bytes: bytes}, Clean: true}
}

// wholes lists the jobs that load their table in one piece.
func wholes(jobs []job) string {
	var names []string
	for _, j := range jobs {
		if j.whole {
			names = append(names, j.table.Table.Table.Name)
		}
	}
	return strings.Join(names, " ")
}

func describe(jobs []job) string {
	var parts []string
	for _, j := range jobs {
		name := j.table.Table.Table.Name
		if j.part != nil {
			name += "/" + j.part.Name
		}
		if !j.whereRange {
			parts = append(parts, name)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s[%d,%d)", name, j.fromPage, j.toPage))
	}
	return strings.Join(parts, " ")
}

func TestPlanJobs(t *testing.T) {
	cfg := Config{Slot: "s", Workers: 2, ChunkBytes: 100}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tables := []Table{table("big", 10, 350), table("small", 1, 50), table("empty", 0, 0)}
	runs, jobs := planJobs(tables, 16, cfg)
	// 350 bytes in chunks of 100: 4 ranges over 10 pages, the last round of
	// two half the size of the first, the last range open-ended.
	if got, want := describe(jobs), "big[0,3) big[3,6) big[6,8) big[8,0) small empty"; got != want {
		t.Fatalf("jobs: %s\nwant: %s", got, want)
	}
	if got := wholes(jobs); got != "small empty" {
		t.Fatalf("whole loads: %q, want the tables not cut into ranges", got)
	}
	if runs[0].remaining.Load() != 4 || runs[1].remaining.Load() != 1 {
		t.Fatalf("remaining: %d, %d", runs[0].remaining.Load(), runs[1].remaining.Load())
	}

	// 5 chunks' worth rounds up to 6 ranges, a multiple of the 2 workers.
	_, jobs = planJobs([]Table{table("odd", 60, 450)}, 16, cfg)
	if got, want := describe(jobs), "odd[0,12) odd[12,24) odd[24,36) odd[36,48) odd[48,54) odd[54,0)"; got != want {
		t.Fatalf("odd: %s, want %s", got, want)
	}

	// At most 4 ranges per worker, and never more ranges than pages.
	_, jobs = planJobs([]Table{table("huge", 1000, 100000)}, 16, cfg)
	if len(jobs) != 8 {
		t.Fatalf("huge: %d jobs, want 8: %s", len(jobs), describe(jobs))
	}
	_, jobs = planJobs([]Table{table("dense", 2, 1000)}, 16, cfg)
	if got, want := describe(jobs), "dense[0,1) dense[1,0)"; got != want {
		t.Fatalf("dense: %s, want %s", got, want)
	}

	// No more ranges than workers: the count is not rounded up, and the other
	// workers copy other tables meanwhile.
	_, jobs = planJobs([]Table{table("pair", 10, 150), table("small", 1, 50)}, 16, Config{Slot: "s", Workers: 4, ChunkBytes: 100})
	if got, want := describe(jobs), "pair[0,5) pair[5,0) small"; got != want {
		t.Fatalf("pair: %s, want %s", got, want)
	}

	// Few pages: every range keeps at least one.
	_, jobs = planJobs([]Table{table("few", 3, 1000)}, 16, Config{Slot: "s", Workers: 2, ChunkBytes: 100})
	if got, want := describe(jobs), "few[0,1) few[1,2) few[2,0)"; got != want {
		t.Fatalf("few: %s, want %s", got, want)
	}

	// One worker copies a table in one piece: ranges one after another gain
	// nothing.
	_, jobs = planJobs([]Table{table("big", 10, 350)}, 16, Config{Slot: "s", Workers: 1, ChunkBytes: 100})
	if got := describe(jobs); got != "big" || wholes(jobs) != "big" {
		t.Fatalf("one worker: %s, whole %q", got, wholes(jobs))
	}

	// Before 14 there are no TID range scans: one job per table.
	_, jobs = planJobs([]Table{table("big", 10, 350)}, 13, cfg)
	if got := describe(jobs); got != "big" || wholes(jobs) != "big" {
		t.Fatalf("13: %s, whole %q", got, wholes(jobs))
	}

	// A table not emptied first is never loaded as a whole (truncated).
	kept := table("kept", 1, 50)
	kept.Clean = false
	_, jobs = planJobs([]Table{kept}, 16, cfg)
	if got := wholes(jobs); got != "" {
		t.Fatalf("kept: whole %q", got)
	}
}

// With the servers on pgrelay's own cores, a table is cut into at most half
// as many ranges as there are workers, all copied at once, and not at all
// with 2 or 3 workers.
func TestPlanJobsSharedCores(t *testing.T) {
	for _, c := range []struct {
		workers int
		table   Table
		want    string
	}{
		{2, table("big", 10, 350), "big"},
		{3, table("big", 10, 350), "big"},
		{4, table("big", 10, 350), "big[0,5) big[5,0)"},
		{8, table("big", 10, 350), "big[0,2) big[2,5) big[5,7) big[7,0)"},
		{8, table("pair", 10, 150), "pair[0,5) pair[5,0)"},
		{8, table("few", 3, 1000), "few[0,1) few[1,2) few[2,0)"},
		{8, table("small", 1, 50), "small"},
	} {
		cfg := Config{Slot: "s", Workers: c.workers, ChunkBytes: 100, SharedCores: true}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		runs, jobs := planJobs([]Table{c.table}, 16, cfg)
		if got := describe(jobs); got != c.want {
			t.Errorf("%d workers, %s: %s, want %s", c.workers, c.table.Table.Name, got, c.want)
		}
		if int(runs[0].remaining.Load()) != len(jobs) {
			t.Errorf("%d workers, %s: remaining %d, %d jobs", c.workers, c.table.Table.Name, runs[0].remaining.Load(), len(jobs))
		}
	}
}

// A partitioned table published through its root is copied partition by
// partition, each a table's worth of jobs, all counted as the root's; without
// partitions to read (none, or a foreign one) the root is read as one.
func TestPlanJobsPartitions(t *testing.T) {
	cfg := Config{Slot: "s", Workers: 2, ChunkBytes: 100}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	root := table("m", 12, 400)
	root.Published.Partitioned = true
	root.Published.Parts = []source.Part{{Schema: "public", Name: "m1", Pages: 10, Bytes: 350}, {Schema: "public", Name: "m2", Pages: 2, Bytes: 50}}
	bare := table("n", 0, 0)
	bare.Published.Partitioned = true
	runs, jobs := planJobs([]Table{root, bare}, 16, cfg)
	if got, want := describe(jobs), "m/m1[0,3) m/m1[3,6) m/m1[6,8) m/m1[8,0) m/m2 n"; got != want {
		t.Fatalf("jobs: %s\nwant: %s", got, want)
	}
	// Partitions load into their root, and a root read as one may be
	// partitioned on the target too: none is a whole load.
	if got := wholes(jobs); got != "" {
		t.Fatalf("whole loads: %q", got)
	}
	if runs[0].remaining.Load() != 5 || runs[1].remaining.Load() != 1 {
		t.Fatalf("remaining: %d, %d", runs[0].remaining.Load(), runs[1].remaining.Load())
	}
	for _, c := range []struct {
		j    job
		want string
	}{
		{jobs[0], `COPY (SELECT "id" FROM ONLY "public"."m1" WHERE ctid >= '(0,0)'::tid AND ctid < '(3,0)'::tid AND (k > 10)) TO STDOUT`},
		{jobs[4], `COPY (SELECT "id" FROM ONLY "public"."m2" WHERE (k > 10)) TO STDOUT`},
		{jobs[5], `COPY (SELECT "id" FROM "public"."n") TO STDOUT`},
	} {
		c.j.table.Published.Columns = []string{"id"}
		if c.j.table.Table.Table.Name == "m" {
			c.j.table.Published.RowFilter = "k > 10"
		}
		if got := copyOutSQL(c.j); got != c.want {
			t.Errorf("copy out:\n got %s\nwant %s", got, c.want)
		}
	}
}

// TestLoadsWithoutKey: a table loads without its primary key from 256 kB on,
// a table published through its root by its partitions' sizes.
func TestLoadsWithoutKey(t *testing.T) {
	parts := func(bytes ...int64) Table {
		tb := table("root", 0, 0)
		tb.Published.Partitioned = true
		for i, b := range bytes {
			tb.Published.Parts = append(tb.Published.Parts, source.Part{Name: fmt.Sprint("p", i), Pages: b / 8192, Bytes: b})
		}
		return tb
	}
	for _, c := range []struct {
		name string
		t    Table
		want bool
	}{
		{"one page", table("small", 1, 8192), false},
		{"just under", table("under", 31, 256<<10-1), false},
		{"256 kB", table("at", 32, 256<<10), true},
		{"unknown size", table("unknown", 0, -1), false},
		{"small partitions", parts(8192, 8192), false},
		{"partitions adding up", parts(200<<10, 100<<10), true},
	} {
		if got := c.t.loadsWithoutKey(); got != c.want {
			t.Errorf("%s: loadsWithoutKey = %v, want %v", c.name, got, c.want)
		}
	}
}
