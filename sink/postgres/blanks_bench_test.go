package postgres

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkBlankTrimmer: pgbench_accounts' rows (three int4 and a blank
// char(84)) through the trimmer, in 64 kB reads as the loader does.
func BenchmarkBlankTrimmer(b *testing.B) {
	row := [][]byte{{0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 0}, bytes.Repeat([]byte{' '}, 84)}
	rows := make([][][]byte, 100000)
	for i := range rows {
		rows[i] = row
	}
	src := copyStream(0, rows)
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		r := newBlankTrimmer(bytes.NewReader(src), []bool{false, false, false, true})
		for {
			if _, err := r.Read(buf); err == io.EOF {
				break
			}
		}
	}
}

func BenchmarkTrimBlanks(b *testing.B) {
	v := append([]byte("abc"), bytes.Repeat([]byte{' '}, 81)...)
	for b.Loop() {
		if len(trimBlanks(v)) != 3 {
			b.Fatal("wrong")
		}
	}
}
