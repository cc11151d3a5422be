package snapshot

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// reportProgress shows rows and MB per table and an ETA: a refreshed block on a
// terminal, a log line every 10 seconds otherwise. The returned func stops it.
func reportProgress(cfg Config, runs []*tableRun, start time.Time) func() {
	every := 10 * time.Second
	if cfg.Progress != nil {
		every = time.Second
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		lines := 0
		for {
			select {
			case <-done:
				if cfg.Progress != nil && lines > 0 {
					fmt.Fprint(cfg.Progress, render(runs, start, &lines))
				}
				return
			case <-tick.C:
			}
			if cfg.Progress != nil {
				fmt.Fprint(cfg.Progress, render(runs, start, &lines))
				continue
			}
			var rows, bytes int64
			for _, r := range runs {
				rows += r.rows.Load()
				bytes += r.bytes.Load()
			}
			f, tablesDone := progressFraction(runs)
			cfg.Log.Info("snapshot progress", "tables_done", tablesDone, "tables", len(runs), "rows", rows, "mb", fmt.Sprintf("%.1f", float64(bytes)/(1<<20)), "eta", eta(f, start))
		}
	}()
	return func() { close(done); <-stopped }
}

// render draws one line per table in progress plus a total, moving the cursor
// up over the previous block.
func render(runs []*tableRun, start time.Time, lines *int) string {
	var b strings.Builder
	if *lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", *lines)
	}
	n := 0
	var rows, bytes int64
	for _, r := range runs {
		rr, rb := r.rows.Load(), r.bytes.Load()
		rows += rr
		bytes += rb
		if rb == 0 {
			continue
		}
		state := "copying"
		if r.remaining.Load() == 0 {
			state = "done"
		}
		fmt.Fprintf(&b, "\x1b[2K  %-40s %-8s %12d rows %9.1f MB\n", r.Table.Table.QualifiedName(), state, rr, float64(rb)/(1<<20))
		n++
	}
	f, tablesDone := progressFraction(runs)
	fmt.Fprintf(&b, "\x1b[2K  total %d of %d tables, %d rows, %.1f MB, %.1f MB/s, ETA %s\n", tablesDone, len(runs), rows, float64(bytes)/(1<<20),
		float64(bytes)/(1<<20)/max(time.Since(start).Seconds(), 0.001), eta(f, start))
	*lines = n + 1
	return b.String()
}

// tableOverhead is what copying a table costs besides its data (its jobs'
// queries, its primary key and indexes, its state rows), counted as bytes of
// data for the ETA: with thousands of small tables that is most of the time.
const tableOverhead = 1 << 20

// progressFraction estimates how much of the copy is done, from 0 to 1: each
// table weighs its size plus tableOverhead and counts as done once its copy
// and indexes are, before that by the share of its size copied (COPY data
// against the table's size on disk, a rough match, held below 0.95).
func progressFraction(runs []*tableRun) (float64, int) {
	var done, total float64
	tables := 0
	for _, r := range runs {
		w := float64(max(r.Published.Bytes, 0) + tableOverhead)
		total += w
		switch {
		case r.finished.Load():
			done += w
			tables++
		case r.Published.Bytes > 0:
			done += float64(r.Published.Bytes) * min(float64(r.bytes.Load())/float64(r.Published.Bytes), 0.95)
		}
	}
	if total == 0 {
		return 0, tables
	}
	return done / total, tables
}

func eta(fraction float64, start time.Time) string {
	if fraction <= 0 || fraction >= 1 {
		return "-"
	}
	el := time.Since(start)
	return (time.Duration(float64(el) * (1 - fraction) / fraction)).Round(time.Second).String()
}

// Steps logs how far a long preparation over many tables has got, at most
// every stepsEvery: before the first table is copied, reading thousands of
// tables' definitions, creating them and their copy state takes a while.
type Steps struct {
	Log   *slog.Logger
	What  string // "preparing the copy"
	Total int
	last  time.Time
}

var stepsEvery = 10 * time.Second

// Done records that n of Total are done.
func (s *Steps) Done(n int) {
	now := time.Now()
	if s.last.IsZero() {
		s.last = now
		return
	}
	if now.Sub(s.last) < stepsEvery || s.Log == nil {
		return
	}
	s.last = now
	s.Log.Info(s.What, "tables_done", n, "tables", s.Total)
}
