package snapshot

import (
	"fmt"
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
	var total int64
	for _, r := range runs {
		total += r.Published.Bytes
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
					fmt.Fprint(cfg.Progress, render(runs, total, start, &lines))
				}
				return
			case <-tick.C:
			}
			if cfg.Progress != nil {
				fmt.Fprint(cfg.Progress, render(runs, total, start, &lines))
				continue
			}
			var rows, bytes int64
			for _, r := range runs {
				rows += r.rows.Load()
				bytes += r.bytes.Load()
			}
			cfg.Log.Info("snapshot progress", "rows", rows, "mb", fmt.Sprintf("%.1f", float64(bytes)/(1<<20)), "eta", eta(bytes, total, start))
		}
	}()
	return func() { close(done); <-stopped }
}

// render draws one line per table in progress plus a total, moving the cursor
// up over the previous block.
func render(runs []*tableRun, total int64, start time.Time, lines *int) string {
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
	fmt.Fprintf(&b, "\x1b[2K  total %d rows, %.1f MB, %.1f MB/s, ETA %s\n", rows, float64(bytes)/(1<<20),
		float64(bytes)/(1<<20)/max(time.Since(start).Seconds(), 0.001), eta(bytes, total, start))
	*lines = n + 1
	return b.String()
}

func eta(done, total int64, start time.Time) string {
	if done <= 0 || total <= done {
		return "-"
	}
	el := time.Since(start)
	return (time.Duration(float64(el) * float64(total-done) / float64(done))).Round(time.Second).String()
}
