package snapshot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

func table(name string, pages, bytes int64) Table {
	return Table{Table: &schema.Table{Schema: "public", Name: name}, Published: source.PublishedTable{Pages: pages, Bytes: bytes}}
}

func describe(jobs []job) string {
	var parts []string
	for _, j := range jobs {
		if !j.whereRange {
			parts = append(parts, j.table.Table.Table.Name)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s[%d,%d)", j.table.Table.Table.Name, j.fromPage, j.toPage))
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
	// 350 bytes in chunks of 100: 4 ranges over 10 pages, the last open-ended.
	if got, want := describe(jobs), "big[0,3) big[3,6) big[6,9) big[9,0) small empty"; got != want {
		t.Fatalf("jobs: %s\nwant: %s", got, want)
	}
	if runs[0].remaining.Load() != 4 || runs[1].remaining.Load() != 1 {
		t.Fatalf("remaining: %d, %d", runs[0].remaining.Load(), runs[1].remaining.Load())
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

	// Before 14 there are no TID range scans: one job per table.
	_, jobs = planJobs([]Table{table("big", 10, 350)}, 13, cfg)
	if got := describe(jobs); got != "big" {
		t.Fatalf("13: %s", got)
	}
}
