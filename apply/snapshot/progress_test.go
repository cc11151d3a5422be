package snapshot

import (
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

func progressRun(size, copied int64, finished bool) *tableRun {
	r := &tableRun{Table: Table{Table: &schema.Table{Schema: "public", Name: "t"}, Published: source.PublishedTable{Bytes: size}}}
	r.bytes.Store(copied)
	r.finished.Store(finished)
	return r
}

// The ETA followed bytes against the tables' sizes on disk: with thousands of
// small tables (a few kB of COPY data against 40 kB on disk each) it grew
// while the copy neared its end. Each table now counts once done, with a
// fixed cost besides its data.
func TestProgressFraction(t *testing.T) {
	var small []*tableRun
	for i := range 2000 {
		small = append(small, progressRun(40<<10, 2<<10, i < 1500))
	}
	f, done := progressFraction(small)
	if done != 1500 || math.Abs(f-0.75) > 0.01 {
		t.Errorf("2000 small tables, 1500 done: fraction %.3f, %d done; want 0.75, 1500", f, done)
	}
	// One large table half copied, one small one done.
	f, done = progressFraction([]*tableRun{progressRun(1<<30, 1<<29, false), progressRun(8<<10, 1<<10, true)})
	if done != 1 || f < 0.45 || f > 0.55 {
		t.Errorf("a 1 GB table half copied: fraction %.3f, %d done", f, done)
	}
	// Copied past its size on disk but not indexed yet: not done.
	if f, _ := progressFraction([]*tableRun{progressRun(1<<20, 2<<20, false)}); f >= 1 {
		t.Errorf("a table not indexed yet counts as done: %.3f", f)
	}
	if got := eta(0.5, time.Now().Add(-10*time.Second)); got != "10s" {
		t.Errorf("eta half way after 10s = %s, want 10s", got)
	}
	if got := eta(0, time.Now()); got != "-" {
		t.Errorf("eta at 0 = %s", got)
	}
	var lines int
	if out := render(small, time.Now().Add(-time.Minute), &lines); !strings.Contains(out, "total 1500 of 2000 tables") {
		t.Errorf("render: %q", out[len(out)-200:])
	}
}

func TestStepsLogsProgress(t *testing.T) {
	defer func(d time.Duration) { stepsEvery = d }(stepsEvery)
	stepsEvery = 0
	var buf strings.Builder
	s := &Steps{Log: slog.New(slog.NewTextHandler(&buf, nil)), What: "preparing the copy", Total: 9}
	s.Done(0) // starts the clock
	s.Done(5)
	if got := buf.String(); !strings.Contains(got, `msg="preparing the copy" tables_done=5 tables=9`) {
		t.Errorf("logged %q", got)
	}
}
