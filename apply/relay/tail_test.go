package relay

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/source"
)

// beginBytes builds a pgoutput Begin message.
func beginBytes(finalLSN uint64, xid uint32) []byte {
	b := []byte{'B'}
	b = binary.BigEndian.AppendUint64(b, finalLSN)
	b = binary.BigEndian.AppendUint64(b, 0) // 2000-01-01
	return binary.BigEndian.AppendUint32(b, xid)
}

func commitBytes(commitLSN, endLSN uint64) []byte {
	b := []byte{'C', 0}
	b = binary.BigEndian.AppendUint64(b, commitLSN)
	b = binary.BigEndian.AppendUint64(b, endLSN)
	return binary.BigEndian.AppendUint64(b, 0)
}

// flushCounter records each write reaching the underlying writer.
type flushCounter struct {
	bytes.Buffer
	writes int
}

func (f *flushCounter) Write(p []byte) (int, error) { f.writes++; return f.Buffer.Write(p) }

func TestTailerHandle(t *testing.T) {
	var out flushCounter
	tl := newTailer(&out, 1)
	ack, err := tl.handle(source.Frame{WALStart: 0x100, Data: beginBytes(0x180, 42)})
	if err != nil {
		t.Fatal(err)
	}
	if ack != 0x100 || out.writes != 1 {
		t.Fatalf("begin: ack %s, %d writes", ack, out.writes)
	}
	ack, err = tl.handle(source.Frame{WALStart: 0x180, Data: commitBytes(0x180, 0x1b0)})
	if err != nil {
		t.Fatal(err)
	}
	if ack != 0x1b0 || out.writes != 2 {
		t.Fatalf("commit: ack %s, %d writes; a commit acks its end LSN and every line is flushed", ack, out.writes)
	}
	want := `{"type":"begin","lsn":"0/100","xid":42,"final_lsn":"0/180","commit_time":"2000-01-01T00:00:00Z"}` + "\n" +
		`{"type":"commit","lsn":"0/180","flags":0,"commit_lsn":"0/180","end_lsn":"0/1B0","commit_time":"2000-01-01T00:00:00Z"}` + "\n"
	if out.String() != want {
		t.Fatalf("output\n got %s\nwant %s", out.String(), want)
	}
	_, err = tl.handle(source.Frame{WALStart: 0x200, Data: []byte{'Z'}})
	if err == nil || !strings.HasPrefix(err.Error(), "tail: at 0/200: ") {
		t.Fatalf("bad message: %v", err)
	}
}
