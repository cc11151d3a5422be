package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// msgBuilder builds pgoutput messages byte by byte, the way the walsender writes them.
type msgBuilder struct{ b []byte }

func pgmsg(t MessageType) *msgBuilder { return &msgBuilder{b: []byte{byte(t)}} }

func (w *msgBuilder) i8(v uint8) *msgBuilder { w.b = append(w.b, v); return w }
func (w *msgBuilder) i16(v int16) *msgBuilder {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(v))
	return w
}
func (w *msgBuilder) i32(v uint32) *msgBuilder { w.b = binary.BigEndian.AppendUint32(w.b, v); return w }
func (w *msgBuilder) i64(v uint64) *msgBuilder { w.b = binary.BigEndian.AppendUint64(w.b, v); return w }
func (w *msgBuilder) str(s string) *msgBuilder { w.b = append(append(w.b, s...), 0); return w }
func (w *msgBuilder) raw(b []byte) *msgBuilder { w.b = append(w.b, b...); return w }
func (w *msgBuilder) ts(t time.Time) *msgBuilder {
	return w.i64(uint64((t.Unix()-pgEpochUnix)*1e6 + int64(t.Nanosecond()/1e3)))
}

// tuple writes a TupleData.
func (w *msgBuilder) tuple(vals ...Value) *msgBuilder {
	w.i16(int16(len(vals)))
	for _, v := range vals {
		w.i8(v.Kind)
		if v.Kind == ValueText || v.Kind == ValueBinary {
			w.i32(uint32(len(v.Data)))
			w.raw(v.Data)
		}
	}
	return w
}

func (w *msgBuilder) bytes() []byte { return w.b }

func tval(s string) Value  { return Value{Kind: ValueText, Data: []byte(s)} }
func bval(b ...byte) Value { return Value{Kind: ValueBinary, Data: append([]byte{}, b...)} }

var (
	nullVal      = Value{Kind: ValueNull}
	unchangedVal = Value{Kind: ValueUnchanged}
)

// pgts is a timestamp given as PostgreSQL microseconds, computed independently of
// the decoder's pgTime.
func pgts(micros int64) time.Time {
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(micros) * time.Microsecond)
}

var (
	fxTime1 = pgts(812_345_678_901_234) // 2025-09-28-ish
	fxTime2 = pgts(-1)                  // 1999-12-31 23:59:59.999999
	fxTime3 = pgts(0)
)

// decodeFixture is one message and what it decodes to.
type decodeFixture struct {
	name       string
	minVersion int  // the first protocol version the message is valid in
	streamed   bool // decoded inside a streamed chunk (after a Stream Start)
	buf        []byte
	want       Message
	// alsoValidAt lists shorter lengths at which the message is still valid (the
	// protocol 4 Stream Abort without its abort info), excluded from truncation tests.
	alsoValidAt []int
}

func decodeFixtures() []decodeFixture {
	const xid, sxid = 0x01020304, 0xdeadbeef
	relCols := []RelationColumn{
		{Flags: ColumnFlagKey, Name: "aid", TypeOID: 23, TypeMod: -1},
		{Flags: 0, Name: "filler", TypeOID: 1042, TypeMod: 88},
		{Flags: 0, Name: "", TypeOID: 17, TypeMod: -1},
	}
	relation := func(w *msgBuilder) *msgBuilder {
		w.i32(16384).str("public").str("accounts").i8('d').i16(3)
		for _, c := range relCols {
			w.i8(c.Flags).str(c.Name).i32(c.TypeOID).i32(uint32(c.TypeMod))
		}
		return w
	}
	newRow := []Value{tval("1"), nullVal, unchangedVal, bval(0, 1, 2, 0xff), tval("")}
	keyRow := []Value{tval("1"), nullVal, nullVal, nullVal, nullVal}
	oldRow := []Value{tval("1"), tval("x y"), bval(), nullVal, tval("")}

	fs := []decodeFixture{
		{name: "begin", minVersion: 1,
			buf:  pgmsg(MsgBegin).i64(0x16B3748).ts(fxTime1).i32(xid).bytes(),
			want: &Begin{FinalLSN: 0x16B3748, CommitTime: fxTime1, Xid: xid}},
		{name: "begin/before 2000", minVersion: 1,
			buf:  pgmsg(MsgBegin).i64(1).ts(fxTime2).i32(7).bytes(),
			want: &Begin{FinalLSN: 1, CommitTime: fxTime2, Xid: 7}},
		{name: "commit", minVersion: 1,
			buf:  pgmsg(MsgCommit).i8(0).i64(0x100).i64(0x200).ts(fxTime1).bytes(),
			want: &Commit{CommitLSN: 0x100, EndLSN: 0x200, CommitTime: fxTime1}},
		{name: "origin", minVersion: 1,
			buf:  pgmsg(MsgOrigin).i64(0xABCDEF).str("pg_16390").bytes(),
			want: &Origin{CommitLSN: 0xABCDEF, Name: "pg_16390"}},
		{name: "origin/in stream", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgOrigin).i64(0xABCDEF).str("").bytes(),
			want: &Origin{CommitLSN: 0xABCDEF, Name: ""}},
		{name: "relation", minVersion: 1,
			buf: relation(pgmsg(MsgRelation)).bytes(),
			want: &Relation{RelationID: 16384, Namespace: "public", Name: "accounts",
				ReplicaIdentity: 'd', Columns: relCols}},
		{name: "relation/no columns", minVersion: 1,
			buf: pgmsg(MsgRelation).i32(1).str("").str("t").i8('n').i16(0).bytes(),
			want: &Relation{RelationID: 1, Namespace: "", Name: "t", ReplicaIdentity: 'n',
				Columns: []RelationColumn{}}},
		{name: "update/no columns, old full", minVersion: 1,
			buf:  pgmsg(MsgUpdate).i32(1).i8('O').tuple().i8('N').tuple().bytes(),
			want: &Update{RelationID: 1, OldKind: OldFull, Old: Tuple{}, New: Tuple{}}},
		{name: "delete/no columns", minVersion: 1,
			buf:  pgmsg(MsgDelete).i32(1).i8('O').tuple().bytes(),
			want: &Delete{RelationID: 1, OldKind: OldFull, Old: Tuple{}}},
		{name: "relation/streamed", minVersion: 2, streamed: true,
			buf: relation(pgmsg(MsgRelation).i32(xid)).bytes(),
			want: &Relation{Xid: xid, RelationID: 16384, Namespace: "public", Name: "accounts",
				ReplicaIdentity: 'd', Columns: relCols}},
		{name: "type", minVersion: 1,
			buf:  pgmsg(MsgType).i32(16400).str("public").str("mood").bytes(),
			want: &TypeMessage{TypeOID: 16400, Namespace: "public", Name: "mood"}},
		{name: "type/streamed", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgType).i32(xid).i32(16400).str("public").str("mood").bytes(),
			want: &TypeMessage{Xid: xid, TypeOID: 16400, Namespace: "public", Name: "mood"}},
		{name: "insert", minVersion: 1,
			buf:  pgmsg(MsgInsert).i32(16384).i8('N').tuple(newRow...).bytes(),
			want: &Insert{RelationID: 16384, New: newRow}},
		{name: "insert/no columns", minVersion: 1,
			buf:  pgmsg(MsgInsert).i32(5).i8('N').tuple().bytes(),
			want: &Insert{RelationID: 5, New: Tuple{}}}, // empty, not nil: the row was sent
		{name: "insert/streamed", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgInsert).i32(xid).i32(16384).i8('N').tuple(newRow...).bytes(),
			want: &Insert{Xid: xid, RelationID: 16384, New: newRow}},
		{name: "update/no old", minVersion: 1,
			buf:  pgmsg(MsgUpdate).i32(16384).i8('N').tuple(newRow...).bytes(),
			want: &Update{RelationID: 16384, New: newRow}},
		{name: "update/old key", minVersion: 1,
			buf:  pgmsg(MsgUpdate).i32(16384).i8('K').tuple(keyRow...).i8('N').tuple(newRow...).bytes(),
			want: &Update{RelationID: 16384, OldKind: OldKey, Old: keyRow, New: newRow}},
		{name: "update/old full", minVersion: 1,
			buf:  pgmsg(MsgUpdate).i32(16384).i8('O').tuple(oldRow...).i8('N').tuple(newRow...).bytes(),
			want: &Update{RelationID: 16384, OldKind: OldFull, Old: oldRow, New: newRow}},
		{name: "update/streamed old full", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgUpdate).i32(xid).i32(16384).i8('O').tuple(oldRow...).i8('N').tuple(newRow...).bytes(),
			want: &Update{Xid: xid, RelationID: 16384, OldKind: OldFull, Old: oldRow, New: newRow}},
		{name: "update/streamed no old", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgUpdate).i32(xid).i32(16384).i8('N').tuple(newRow...).bytes(),
			want: &Update{Xid: xid, RelationID: 16384, New: newRow}},
		{name: "delete/key", minVersion: 1,
			buf:  pgmsg(MsgDelete).i32(16384).i8('K').tuple(keyRow...).bytes(),
			want: &Delete{RelationID: 16384, OldKind: OldKey, Old: keyRow}},
		{name: "delete/full", minVersion: 1,
			buf:  pgmsg(MsgDelete).i32(16384).i8('O').tuple(oldRow...).bytes(),
			want: &Delete{RelationID: 16384, OldKind: OldFull, Old: oldRow}},
		{name: "delete/streamed key", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgDelete).i32(xid).i32(16384).i8('K').tuple(keyRow...).bytes(),
			want: &Delete{Xid: xid, RelationID: 16384, OldKind: OldKey, Old: keyRow}},
		{name: "truncate", minVersion: 1,
			buf: pgmsg(MsgTruncate).i32(2).i8(TruncateCascade | TruncateRestartIdentity).i32(16384).i32(16390).bytes(),
			want: &Truncate{Options: TruncateCascade | TruncateRestartIdentity,
				RelationIDs: []uint32{16384, 16390}}},
		{name: "truncate/streamed", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgTruncate).i32(xid).i32(1).i8(0).i32(16384).bytes(),
			want: &Truncate{Xid: xid, RelationIDs: []uint32{16384}}},
		{name: "message/transactional", minVersion: 1,
			buf:  pgmsg(MsgMessage).i8(1).i64(0x3000).str("pgrelay").i32(5).raw([]byte("hello")).bytes(),
			want: &LogicalMessage{Flags: 1, LSN: 0x3000, Prefix: "pgrelay", Content: []byte("hello")}},
		{name: "message/non-transactional empty", minVersion: 1,
			buf:  pgmsg(MsgMessage).i8(0).i64(0x3000).str("").i32(0).bytes(),
			want: &LogicalMessage{Flags: 0, LSN: 0x3000, Prefix: "", Content: []byte{}}},
		{name: "message/streamed", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgMessage).i32(xid).i8(1).i64(0x3000).str("p").i32(2).raw([]byte{0, 0xff}).bytes(),
			want: &LogicalMessage{Xid: xid, Flags: 1, LSN: 0x3000, Prefix: "p", Content: []byte{0, 0xff}}},
		{name: "stream start/first", minVersion: 2,
			buf:  pgmsg(MsgStreamStart).i32(xid).i8(1).bytes(),
			want: &StreamStart{Xid: xid, FirstSegment: true}},
		{name: "stream start/later", minVersion: 2,
			buf:  pgmsg(MsgStreamStart).i32(xid).i8(0).bytes(),
			want: &StreamStart{Xid: xid}},
		{name: "stream stop", minVersion: 2, streamed: true,
			buf:  pgmsg(MsgStreamStop).bytes(),
			want: &StreamStop{}},
		{name: "stream commit", minVersion: 2,
			buf:  pgmsg(MsgStreamCommit).i32(xid).i8(0).i64(0x5000).i64(0x5100).ts(fxTime1).bytes(),
			want: &StreamCommit{Xid: xid, CommitLSN: 0x5000, EndLSN: 0x5100, CommitTime: fxTime1}},
		{name: "stream abort", minVersion: 2,
			buf:  pgmsg(MsgStreamAbort).i32(xid).i32(sxid).bytes(),
			want: &StreamAbort{Xid: xid, SubXid: sxid}},
		{name: "begin prepare", minVersion: 3,
			buf:  pgmsg(MsgBeginPrepare).i64(0x6000).i64(0x6100).ts(fxTime1).i32(xid).str("gid-1").bytes(),
			want: &BeginPrepare{PrepareLSN: 0x6000, EndLSN: 0x6100, PrepareTime: fxTime1, Xid: xid, GID: "gid-1"}},
		{name: "prepare", minVersion: 3,
			buf:  pgmsg(MsgPrepare).i8(0).i64(0x6000).i64(0x6100).ts(fxTime1).i32(xid).str("gid-1").bytes(),
			want: &Prepare{PrepareLSN: 0x6000, EndLSN: 0x6100, PrepareTime: fxTime1, Xid: xid, GID: "gid-1"}},
		{name: "commit prepared", minVersion: 3,
			buf:  pgmsg(MsgCommitPrepared).i8(0).i64(0x7000).i64(0x7100).ts(fxTime3).i32(xid).str("gid-1").bytes(),
			want: &CommitPrepared{CommitLSN: 0x7000, EndLSN: 0x7100, CommitTime: fxTime3, Xid: xid, GID: "gid-1"}},
		{name: "rollback prepared", minVersion: 3,
			buf: pgmsg(MsgRollbackPrepared).i8(0).i64(0x6100).i64(0x8100).ts(fxTime1).ts(fxTime2).i32(xid).str("").bytes(),
			want: &RollbackPrepared{PrepareEndLSN: 0x6100, RollbackEndLSN: 0x8100, PrepareTime: fxTime1,
				RollbackTime: fxTime2, Xid: xid, GID: ""}},
		{name: "stream prepare", minVersion: 3,
			buf:  pgmsg(MsgStreamPrepare).i8(0).i64(0x9000).i64(0x9100).ts(fxTime1).i32(xid).str("gid-2").bytes(),
			want: &StreamPrepare{PrepareLSN: 0x9000, EndLSN: 0x9100, PrepareTime: fxTime1, Xid: xid, GID: "gid-2"}},
	}
	abortWithInfo := pgmsg(MsgStreamAbort).i32(xid).i32(sxid).i64(0xA000).ts(fxTime1).bytes()
	fs = append(fs, decodeFixture{name: "stream abort/with abort info", minVersion: 4,
		buf:         abortWithInfo,
		want:        &StreamAbort{Xid: xid, SubXid: sxid, HasAbortInfo: true, AbortLSN: 0xA000, AbortTime: fxTime1},
		alsoValidAt: []int{len(abortWithInfo) - abortInfoBytesV4}})
	return fs
}

// decoderAt returns a decoder for version v, inside a streamed chunk when streamed.
func decoderAt(t testing.TB, v int, streamed bool) *Decoder {
	t.Helper()
	d := NewDecoder(v)
	if streamed {
		if _, err := d.Decode(pgmsg(MsgStreamStart).i32(99).i8(1).bytes()); err != nil {
			t.Fatalf("stream start: %v", err)
		}
	}
	return d
}

// exact returns a copy of b whose capacity is its length, so that any read past the
// end would fault the bounds check rather than read the caller's spare capacity.
func exactCopy(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

func TestDecodeFixtures(t *testing.T) {
	for _, fx := range decodeFixtures() {
		for v := fx.minVersion; v <= protoMax; v++ {
			t.Run(fmt.Sprintf("%s/v%d", fx.name, v), func(t *testing.T) {
				d := decoderAt(t, v, fx.streamed)
				buf := exactCopy(fx.buf)
				got, err := d.Decode(buf)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !reflect.DeepEqual(got, fx.want) {
					t.Fatalf("Decode =\n%#v\nwant\n%#v", got, fx.want)
				}
				if got.Type() != MessageType(fx.buf[0]) {
					t.Errorf("Type() = %v, want %v", got.Type(), MessageType(fx.buf[0]))
				}
				wantStream := fx.streamed
				switch got.Type() {
				case MsgStreamStart:
					wantStream = true
				case MsgStreamStop:
					wantStream = false
				}
				if d.InStream() != wantStream {
					t.Errorf("InStream() = %v after %s, want %v", d.InStream(), got.Type(), wantStream)
				}
				checkWithin(t, got, buf)
				// The decoder must not depend on anything but buf: the same bytes
				// decode the same way a second time.
				if !d.InStream() && fx.streamed {
					d = decoderAt(t, v, true)
				}
				if got.Type() == MsgStreamStart {
					d = decoderAt(t, v, false)
				}
				again, err := d.Decode(buf)
				if err != nil || !reflect.DeepEqual(again, fx.want) {
					t.Fatalf("second Decode = %#v, %v", again, err)
				}
			})
		}
	}
}

// checkWithin fails when a byte slice of m points outside buf or has capacity past
// its length (an append by the caller would then overwrite buf).
func checkWithin(t testing.TB, m Message, buf []byte) {
	t.Helper()
	var slices [][]byte
	tuple := func(tu Tuple) {
		for _, v := range tu {
			if (v.Kind == ValueNull || v.Kind == ValueUnchanged) != (v.Data == nil) {
				t.Errorf("value of kind %q has Data %v", v.Kind, v.Data)
			}
			slices = append(slices, v.Data)
		}
	}
	switch m := m.(type) {
	case *Insert:
		tuple(m.New)
	case *Update:
		tuple(m.Old)
		tuple(m.New)
	case *Delete:
		tuple(m.Old)
	case *LogicalMessage:
		slices = append(slices, m.Content)
	}
	if len(buf) == 0 {
		return
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	hi := lo + uintptr(len(buf))
	for _, s := range slices {
		if cap(s) != len(s) {
			t.Errorf("slice of len %d has cap %d: an append would overwrite the input", len(s), cap(s))
		}
		if len(s) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		if p < lo || p+uintptr(len(s)) > hi {
			t.Errorf("slice [%#x, +%d) is outside the input [%#x, %#x)", p, len(s), lo, hi)
		}
	}
}

func TestDecodeTruncatedAtEveryOffset(t *testing.T) {
	for _, fx := range decodeFixtures() {
		for v := fx.minVersion; v <= protoMax; v++ {
			t.Run(fmt.Sprintf("%s/v%d", fx.name, v), func(t *testing.T) {
				for n := 0; n < len(fx.buf); n++ {
					if containsInt(fx.alsoValidAt, n) {
						continue
					}
					d := decoderAt(t, v, fx.streamed)
					got, err := d.Decode(exactCopy(fx.buf[:n]))
					var de *DecodeError
					if !errors.As(err, &de) {
						t.Fatalf("Decode(first %d of %d bytes) = %#v, %v; want a *DecodeError", n, len(fx.buf), got, err)
					}
					if got != nil {
						t.Errorf("Decode(first %d bytes) returned a message with its error", n)
					}
					if de.Offset < 0 || de.Offset > n {
						t.Errorf("error offset %d outside the %d bytes: %v", de.Offset, n, err)
					}
					if n > 0 && !strings.HasPrefix(err.Error(), "pgoutput: "+MessageType(fx.buf[0]).name()+" message ") {
						t.Errorf("error %q does not name the %s message", err, MessageType(fx.buf[0]))
					}
					if d.InStream() != fx.streamed {
						t.Errorf("a failed Decode changed InStream to %v", d.InStream())
					}
				}
			})
		}
	}
}

func containsInt(s []int, n int) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}

func TestDecodeTrailingBytes(t *testing.T) {
	for _, fx := range decodeFixtures() {
		for v := fx.minVersion; v <= protoMax; v++ {
			d := decoderAt(t, v, fx.streamed)
			buf := append(exactCopy(fx.buf), 0)
			if _, err := d.Decode(buf); err == nil || !strings.Contains(err.Error(), "trailing") &&
				!strings.Contains(err.Error(), "want 0 or 16") {
				t.Errorf("%s/v%d with a trailing byte: err = %v, want a trailing-bytes error", fx.name, v, err)
			}
		}
	}
}

func TestDecodeWrongVersion(t *testing.T) {
	for _, fx := range decodeFixtures() {
		typ := MessageType(fx.buf[0])
		for v := 1; v < minProtoVersion(typ); v++ {
			d := NewDecoder(v)
			_, err := d.Decode(exactCopy(fx.buf))
			want := fmt.Sprintf("message not valid in protocol version %d at offset 0: it needs proto_version %d or later",
				v, minProtoVersion(typ))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s at v%d: err = %v, want it to contain %q", fx.name, v, err, want)
			}
		}
	}
	for _, v := range []int{0, 5, -1} {
		_, err := NewDecoder(v).Decode(pgmsg(MsgBegin).i64(0).i64(0).i32(1).bytes())
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unsupported proto_version %d", v)) {
			t.Errorf("NewDecoder(%d).Decode: err = %v, want unsupported proto_version", v, err)
		}
	}
	// Stream Abort with abort info is protocol 4 only.
	buf := pgmsg(MsgStreamAbort).i32(1).i32(2).i64(3).i64(4).bytes()
	for _, v := range []int{2, 3} {
		if _, err := NewDecoder(v).Decode(buf); err == nil || !strings.Contains(err.Error(), "abort info needs proto_version 4") {
			t.Errorf("v%d stream abort with abort info: err = %v", v, err)
		}
	}
}

func TestDecodeErrorText(t *testing.T) {
	cases := []struct {
		name     string
		streamed bool
		buf      []byte
		want     string
	}{
		{"unknown type", false, []byte("Zabc"), "pgoutput: unknown message type 'Z' (0x5a)"},
		{"unknown unprintable type", false, []byte{0}, "pgoutput: unknown message type 0x00"},
		{"empty", false, nil, "pgoutput: empty message: an XLogData payload holds at least the type byte"},
		{"insert relation id", false, []byte{'I', 0, 0}, "pgoutput: insert message truncated at offset 1: need 4 bytes for relation id, 2 left"},
		{"streamed insert xid", true, []byte{'I', 0, 0}, "pgoutput: insert message truncated at offset 1: need 4 bytes for streamed transaction xid, 2 left"},
		{"tuple value kind", false, pgmsg(MsgInsert).i32(1).i8('N').i16(2).i8('n').i8('x').bytes(),
			"pgoutput: insert message malformed at offset 9: new tuple column 2 has unknown value kind 'x' (0x78); want 'n', 'u', 't' or 'b'"},
		{"stream stop outside", false, []byte{'E'}, "pgoutput: stream stop message out of place at offset 0: Stream Stop without a preceding Stream Start"},
		{"begin inside chunk", true, pgmsg(MsgBegin).i64(0).i64(0).i32(1).bytes(),
			"pgoutput: begin message out of place at offset 0: inside a streamed transaction chunk (after Stream Start, before Stream Stop)"},
	}
	for _, c := range cases {
		d := decoderAt(t, 4, c.streamed)
		_, err := d.Decode(c.buf)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v\nwant %s", c.name, err, c.want)
		}
	}
	de := &DecodeError{Type: MsgInsert, Offset: 17, Msg: "truncated: need 4 bytes for relation id"}
	if got, want := de.Error(), "pgoutput: insert message truncated at offset 17: need 4 bytes for relation id"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	de = &DecodeError{Type: MsgCommit, Offset: 3, Msg: "malformed"}
	if got, want := de.Error(), "pgoutput: commit message malformed at offset 3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestDecodeMalformed(t *testing.T) {
	cases := []struct {
		name     string
		version  int
		streamed bool
		buf      []byte
		want     string
	}{
		{"insert marker", 1, false, pgmsg(MsgInsert).i32(1).i8('K').tuple(nullVal).bytes(), "new tuple marker is 'K' (0x4b), want 'N'"},
		{"update marker", 1, false, pgmsg(MsgUpdate).i32(1).i8('X').tuple(nullVal).bytes(), "tuple marker is 'X' (0x58), want 'K', 'O' or 'N'"},
		{"update second marker", 1, false, pgmsg(MsgUpdate).i32(1).i8('K').tuple(nullVal).i8('K').tuple(nullVal).bytes(), "new tuple marker is 'K'"},
		{"delete marker", 1, false, pgmsg(MsgDelete).i32(1).i8('N').tuple(nullVal).bytes(), "old tuple marker is 'N' (0x4e), want 'K' or 'O'"},
		{"negative column count", 1, false, pgmsg(MsgInsert).i32(1).i8('N').i16(-1).bytes(), "negative column count -1"},
		{"huge column count", 1, false, pgmsg(MsgInsert).i32(1).i8('N').i16(32767).i8('n').bytes(), "column count 32767 needs at least 32767 bytes, 1 left"},
		{"negative value length", 1, false, pgmsg(MsgInsert).i32(1).i8('N').i16(1).i8('t').i32(0xffffffff).bytes(), "new tuple column 1 has length -1, 0 bytes left"},
		{"value past end", 1, false, pgmsg(MsgInsert).i32(1).i8('N').i16(1).i8('b').i32(4).raw([]byte("abc")).bytes(), "new tuple column 1 has length 4, 3 bytes left"},
		{"old tuple value kind", 1, false, pgmsg(MsgUpdate).i32(1).i8('O').i16(1).i8(0).bytes(), "old tuple column 1 has unknown value kind 0x00"},
		{"relation negative columns", 1, false, pgmsg(MsgRelation).i32(1).str("").str("t").i8('d').i16(-3).bytes(), "negative column count -3"},
		{"relation huge columns", 1, false, pgmsg(MsgRelation).i32(1).str("").str("t").i8('d').i16(1000).raw(make([]byte, 100)).bytes(), "column count 1000 needs at least 10000 bytes, 100 left"},
		{"relation name unterminated", 1, false, pgmsg(MsgRelation).i32(1).str("public").raw([]byte("abc")).bytes(), "no NUL terminator for relation name in the 3 bytes left"},
		{"truncate negative count", 1, false, pgmsg(MsgTruncate).i32(0x80000000).i8(0).bytes(), "negative relation count -2147483648"},
		{"truncate huge count", 1, false, pgmsg(MsgTruncate).i32(1 << 30).i8(0).i32(1).bytes(), "relation count 1073741824 needs at least 4294967296 bytes, 4 left"},
		{"message content past end", 1, false, pgmsg(MsgMessage).i8(0).i64(1).str("p").i32(10).raw([]byte("abc")).bytes(), "content length 10 exceeds the 3 bytes left"},
		{"message negative content", 1, false, pgmsg(MsgMessage).i8(0).i64(1).str("p").i32(0xfffffffe).bytes(), "content length -2 exceeds the 0 bytes left"},
		{"stream start flag", 2, false, pgmsg(MsgStreamStart).i32(1).i8(2).bytes(), "first segment flag is 2, want 0 or 1"},
		{"stream start inside chunk", 2, true, pgmsg(MsgStreamStart).i32(1).i8(0).bytes(), "out of place"},
		{"stream commit inside chunk", 2, true, pgmsg(MsgStreamCommit).i32(1).i8(0).i64(1).i64(2).i64(3).bytes(), "out of place"},
		{"stream abort v4 odd tail", 4, false, pgmsg(MsgStreamAbort).i32(1).i32(2).i64(3).bytes(), "8 bytes after the subtransaction xid, want 0 or 16"},
		{"stream abort v4 long tail", 4, false, pgmsg(MsgStreamAbort).i32(1).i32(2).i64(3).i64(4).i8(0).bytes(), "17 bytes after the subtransaction xid, want 0 or 16"},
		{"stream stop trailing", 2, true, []byte{'E', 0}, "1 unexpected trailing bytes"},
		{"prepare inside chunk", 3, true, pgmsg(MsgPrepare).i8(0).i64(1).i64(2).i64(3).i32(4).str("g").bytes(), "out of place"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decoderAt(t, c.version, c.streamed)
			got, err := d.Decode(exactCopy(c.buf))
			var de *DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode = %#v, %v; want a *DecodeError containing %q", got, err, c.want)
			}
			if d.InStream() != c.streamed {
				t.Errorf("InStream() = %v after a failed Decode, want %v", d.InStream(), c.streamed)
			}
		})
	}
}

// A corrupt column count must be rejected before the decoder grows its arrays.
func TestDecodeHugeCountsDoNotAllocate(t *testing.T) {
	d := NewDecoder(1)
	if _, err := d.Decode(pgmsg(MsgInsert).i32(1).i8('N').i16(32767).raw(make([]byte, 100)).bytes()); err == nil {
		t.Fatal("want an error")
	}
	if _, err := d.Decode(pgmsg(MsgTruncate).i32(1 << 30).i8(0).raw(make([]byte, 100)).bytes()); err == nil {
		t.Fatal("want an error")
	}
	if cap(d.insertNew) != 0 || cap(d.truncateIDs) != 0 {
		t.Errorf("decoder grew its arrays for an impossible count: %d values, %d relation ids",
			cap(d.insertNew), cap(d.truncateIDs))
	}
}

func TestDecodeStreamSequence(t *testing.T) {
	d := NewDecoder(2)
	steps := []struct {
		buf      []byte
		wantXid  uint32
		inStream bool
	}{
		{pgmsg(MsgBegin).i64(1).i64(2).i32(500).bytes(), 0, false},
		{pgmsg(MsgInsert).i32(16384).i8('N').tuple(tval("a")).bytes(), 0, false},
		{pgmsg(MsgCommit).i8(0).i64(1).i64(2).i64(3).bytes(), 0, false},
		{pgmsg(MsgStreamStart).i32(600).i8(1).bytes(), 600, true},
		{pgmsg(MsgOrigin).i64(9).str("o").bytes(), 0, true},
		{pgmsg(MsgInsert).i32(600).i32(16384).i8('N').tuple(tval("b")).bytes(), 600, true},
		{pgmsg(MsgInsert).i32(601).i32(16384).i8('N').tuple(tval("c")).bytes(), 601, true},
		{pgmsg(MsgStreamStop).bytes(), 0, false},
		{pgmsg(MsgStreamAbort).i32(600).i32(601).bytes(), 600, false},
		{pgmsg(MsgStreamStart).i32(600).i8(0).bytes(), 600, true},
		{pgmsg(MsgStreamStop).bytes(), 0, false},
		{pgmsg(MsgStreamCommit).i32(600).i8(0).i64(1).i64(2).i64(3).bytes(), 600, false},
		{pgmsg(MsgInsert).i32(16384).i8('N').tuple(tval("d")).bytes(), 0, false},
	}
	for i, s := range steps {
		m, err := d.Decode(s.buf)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var xid uint32
		switch m := m.(type) {
		case *Insert:
			xid = m.Xid
		case *StreamStart:
			xid = m.Xid
		case *StreamAbort:
			xid = m.Xid
		case *StreamCommit:
			xid = m.Xid
		}
		if xid != s.wantXid || d.InStream() != s.inStream {
			t.Fatalf("step %d (%s): xid %d, InStream %v; want %d, %v", i, m.Type(), xid, d.InStream(), s.wantXid, s.inStream)
		}
	}
}

func TestDecodeZeroAllocs(t *testing.T) {
	wide := wideRow()
	cases := []struct {
		name     string
		streamed bool
		buf      []byte
	}{
		{"insert", false, accountsInsert()},
		{"insert wide", false, pgmsg(MsgInsert).i32(1).i8('N').tuple(wide...).bytes()},
		{"insert streamed", true, pgmsg(MsgInsert).i32(7).i32(1).i8('N').tuple(wide...).bytes()},
		{"update", false, accountsUpdate()},
		{"update old key", false, pgmsg(MsgUpdate).i32(1).i8('K').tuple(wide[:3]...).i8('N').tuple(wide...).bytes()},
		{"update old full", false, wideUpdateFull()},
		{"delete", false, pgmsg(MsgDelete).i32(1).i8('O').tuple(wide...).bytes()},
		{"truncate", false, pgmsg(MsgTruncate).i32(3).i8(0).i32(1).i32(2).i32(3).bytes()},
		{"message", false, pgmsg(MsgMessage).i8(1).i64(5).str("prefix").i32(3).raw([]byte("abc")).bytes()},
	}
	for _, c := range cases {
		d := decoderAt(t, 4, c.streamed)
		if _, err := d.Decode(c.buf); err != nil { // grows the arrays once
			t.Fatalf("%s: %v", c.name, err)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := d.Decode(c.buf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Decode, want 0", c.name, allocs)
		}
	}
}

// TestDecodeReuse pins down the ownership rule: values point into the input and the
// message is reused, so a caller keeps a message by cloning it.
func TestDecodeReuse(t *testing.T) {
	d := NewDecoder(1)
	buf := pgmsg(MsgInsert).i32(1).i8('N').tuple(tval("first"), nullVal, tval("x")).bytes()
	m, err := d.Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	ins := m.(*Insert)
	kept := ins.Clone()
	// Appending to a value must not overwrite the next one in the input.
	_ = append(ins.New[0].Data, '!')
	if !bytes.Equal(ins.New[2].Data, []byte("x")) {
		t.Fatalf("append to a value overwrote the input: %q", ins.New[2].Data)
	}
	m2, err := d.Decode(pgmsg(MsgInsert).i32(2).i8('N').tuple(tval("second")).bytes())
	if err != nil {
		t.Fatal(err)
	}
	if m2.(*Insert) != ins {
		t.Fatalf("Decode did not reuse its Insert")
	}
	want := &Insert{RelationID: 1, New: Tuple{tval("first"), nullVal, tval("x")}}
	if !reflect.DeepEqual(kept, want) {
		t.Fatalf("clone = %#v, want %#v", kept, want)
	}
	// Overwriting the input must not change the clone.
	for i := range buf {
		buf[i] = 0
	}
	if !reflect.DeepEqual(kept, want) {
		t.Fatalf("clone changed with the input: %#v", kept)
	}
	// A caller that drops a tuple does not make the decoder lose its backing array.
	upd := pgmsg(MsgUpdate).i32(1).i8('K').tuple(tval("k")).i8('N').tuple(tval("v")).bytes()
	m3, err := d.Decode(upd)
	if err != nil {
		t.Fatal(err)
	}
	m3.(*Update).Old = nil
	if allocs := testing.AllocsPerRun(100, func() { _, _ = d.Decode(upd) }); allocs != 0 {
		t.Errorf("%v allocations after the caller cleared Old, want 0", allocs)
	}
}

func TestClone(t *testing.T) {
	if Tuple(nil).Clone() != nil {
		t.Error("nil tuple clone is not nil")
	}
	if c := (Tuple{}).Clone(); c == nil || len(c) != 0 {
		t.Errorf("empty tuple clone = %#v", c)
	}
	src := Tuple{tval("abc"), nullVal, unchangedVal, tval(""), bval(1, 2)}
	c := src.Clone()
	if !reflect.DeepEqual(c, src) {
		t.Fatalf("clone = %#v, want %#v", c, src)
	}
	src[0].Data[0] = 'X'
	if string(c[0].Data) != "abc" {
		t.Error("clone shares memory with its source")
	}
	if c[3].Data == nil {
		t.Error("clone turned an empty text value into nil")
	}
	_ = append(c[0].Data, 'Z')
	if c[4].Data[0] != 1 {
		t.Error("append to one cloned value overwrote another")
	}

	var nilIns *Insert
	var nilUpd *Update
	var nilDel *Delete
	var nilTrunc *Truncate
	var nilMsg *LogicalMessage
	if nilIns.Clone() != nil || nilUpd.Clone() != nil || nilDel.Clone() != nil ||
		nilTrunc.Clone() != nil || nilMsg.Clone() != nil {
		t.Error("Clone of a nil message is not nil")
	}
	upd := &Update{Xid: 1, RelationID: 2, OldKind: OldFull, Old: Tuple{tval("o")}, New: Tuple{tval("n")}}
	uc := upd.Clone()
	upd.Old[0].Data[0], upd.New[0].Data[0] = '-', '-'
	if string(uc.Old[0].Data) != "o" || string(uc.New[0].Data) != "n" || uc.OldKind != OldFull || uc.RelationID != 2 {
		t.Errorf("Update clone = %#v", uc)
	}
	del := &Delete{RelationID: 3, OldKind: OldKey, Old: Tuple{tval("k")}}
	dc := del.Clone()
	del.Old[0].Data[0] = '-'
	if string(dc.Old[0].Data) != "k" || dc.OldKind != OldKey {
		t.Errorf("Delete clone = %#v", dc)
	}
	tr := &Truncate{Options: 1, RelationIDs: []uint32{1, 2}}
	tc := tr.Clone()
	tr.RelationIDs[0] = 9
	if tc.RelationIDs[0] != 1 || tc.Options != 1 {
		t.Errorf("Truncate clone = %#v", tc)
	}
	lm := &LogicalMessage{Flags: 1, Prefix: "p", Content: []byte("c")}
	lc := lm.Clone()
	lm.Content[0] = '-'
	if string(lc.Content) != "c" || lc.Prefix != "p" || !lc.Transactional() {
		t.Errorf("LogicalMessage clone = %#v", lc)
	}
}

func TestPgTime(t *testing.T) {
	for _, us := range []int64{0, 1, -1, 999_999, -999_999, 1_000_000, -1_000_001, 812_345_678_901_234, -946_684_800_000_000} {
		if got, want := pgTime(us), pgts(us); !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("pgTime(%d) = %v, want %v UTC", us, got, want)
		}
	}
	if got := pgTime(-946_684_800_000_000); got.Unix() != 0 {
		t.Errorf("pgTime(-946684800000000) = %v, want the Unix epoch", got)
	}
}

func TestMessageTypeString(t *testing.T) {
	if got := MsgStreamCommit.String(); got != "Stream Commit" {
		t.Errorf("String() = %q", got)
	}
	if got := MessageType('Z').String(); got != "MessageType('Z' (0x5a))" {
		t.Errorf("String() = %q", got)
	}
	for _, fx := range decodeFixtures() {
		typ := MessageType(fx.buf[0])
		want := strings.ToLower(typ.String())
		if typ == MsgMessage {
			want = "logical decoding"
		}
		if typ.name() != want {
			t.Errorf("%s: name() = %q, want %q", fx.name, typ.name(), want)
		}
	}
}
