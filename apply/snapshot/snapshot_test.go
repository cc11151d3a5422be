package snapshot

import (
	"bytes"
	"testing"
)

func TestCountingWriterCountsWrites(t *testing.T) {
	run := &tableRun{}
	var out bytes.Buffer
	w := &countingWriter{w: &out, run: run}
	// Rows are counted per Write (one CopyData message each), not per newline.
	for _, row := range []string{"1\tno newline inside\n", "2\ttwo\\nlines\n", "\x00\x01binary without newline"} {
		if _, err := w.Write([]byte(row)); err != nil {
			t.Fatal(err)
		}
	}
	// The table's counters, shared by the ranges copied at once, are updated
	// every countBatch rows and by flush.
	if w.rows != 3 || run.rows.Load() != 0 {
		t.Errorf("before flush: rows %d, table rows %d", w.rows, run.rows.Load())
	}
	w.flush()
	if w.rows != 3 || run.rows.Load() != 3 || run.bytes.Load() != int64(out.Len()) {
		t.Errorf("rows %d/%d, bytes %d of %d", w.rows, run.rows.Load(), run.bytes.Load(), out.Len())
	}
	for i := 0; i < countBatch; i++ {
		if _, err := w.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := run.rows.Load(), int64(3+countBatch); got != want || run.bytes.Load() != int64(out.Len()) {
		t.Errorf("after %d more rows: table rows %d, want %d; bytes %d of %d", countBatch, got, want, run.bytes.Load(), out.Len())
	}
}
