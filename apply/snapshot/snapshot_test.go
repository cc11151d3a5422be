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
	if w.rows != 3 || run.rows.Load() != 3 || run.bytes.Load() != int64(out.Len()) {
		t.Errorf("rows %d/%d, bytes %d of %d", w.rows, run.rows.Load(), run.bytes.Load(), out.Len())
	}
}
