package source

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// The fuzz targets' rule: Decode never panics and never reads outside its input;
// it either fails with a *DecodeError (leaving the stream state alone) or returns a
// message whose slices lie inside the input and which encodes back to exactly the
// input bytes (pgoutput framing is exact, so decoding must be lossless).
//
//	go test ./source -run='^$' -fuzz='^FuzzDecodeV1$' -fuzztime=30s   (and V2, V3, V4)

func FuzzDecodeV1(f *testing.F) { fuzzDecode(f, 1) }
func FuzzDecodeV2(f *testing.F) { fuzzDecode(f, 2) }
func FuzzDecodeV3(f *testing.F) { fuzzDecode(f, 3) }
func FuzzDecodeV4(f *testing.F) { fuzzDecode(f, 4) }

func fuzzDecode(f *testing.F, version int) {
	for _, fx := range decodeFixtures() {
		if fx.minVersion <= version {
			f.Add(fx.buf, fx.streamed)
		}
	}
	f.Add(accountsInsert(), false)
	f.Add(accountsUpdate(), false)
	f.Add(wideUpdateFull(), false)
	f.Add([]byte{}, false)
	f.Add([]byte("Z"), false)

	f.Fuzz(func(t *testing.T, buf []byte, streamed bool) {
		streamed = streamed && version >= protoStream
		d := decoderAt(t, version, streamed)
		buf = exactCopy(buf)
		orig := bytes.Clone(buf)
		m, err := d.Decode(buf)
		if !bytes.Equal(buf, orig) {
			t.Fatalf("Decode modified its input")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is a %T, want *DecodeError", err, err)
			}
			if m != nil {
				t.Fatalf("Decode returned a message with error %v", err)
			}
			if de.Offset < 0 || de.Offset > len(buf) {
				t.Fatalf("error offset %d outside the %d-byte input: %v", de.Offset, len(buf), err)
			}
			if d.InStream() != streamed {
				t.Fatalf("failed Decode changed InStream to %v: %v", d.InStream(), err)
			}
			_ = err.Error()
			return
		}
		checkWithin(t, m, buf)
		if got := encodeMessage(m, streamed); !bytes.Equal(got, buf) {
			t.Fatalf("decoded %#v\nencodes to %x\ninput was  %x", m, got, buf)
		}
	})
}

// encode writes m back in pgoutput format; streamed says whether change messages
// carry the streamed transaction xid.
func encodeMessage(m Message, streamed bool) []byte {
	w := pgmsg(m.Type())
	xid := func(x uint32) {
		if streamed {
			w.i32(x)
		}
	}
	switch m := m.(type) {
	case *Begin:
		w.i64(uint64(m.FinalLSN)).ts(m.CommitTime).i32(m.Xid)
	case *Commit:
		w.i8(m.Flags).i64(uint64(m.CommitLSN)).i64(uint64(m.EndLSN)).ts(m.CommitTime)
	case *Origin:
		w.i64(uint64(m.CommitLSN)).str(m.Name)
	case *Relation:
		xid(m.Xid)
		w.i32(m.RelationID).str(m.Namespace).str(m.Name).i8(m.ReplicaIdentity).i16(int16(len(m.Columns)))
		for _, c := range m.Columns {
			w.i8(c.Flags).str(c.Name).i32(c.TypeOID).i32(uint32(c.TypeMod))
		}
	case *TypeMessage:
		xid(m.Xid)
		w.i32(m.TypeOID).str(m.Namespace).str(m.Name)
	case *Insert:
		xid(m.Xid)
		w.i32(m.RelationID).i8('N').tuple(m.New...)
	case *Update:
		xid(m.Xid)
		w.i32(m.RelationID)
		if m.OldKind != OldNone {
			w.i8(m.OldKind).tuple(m.Old...)
		}
		w.i8('N').tuple(m.New...)
	case *Delete:
		xid(m.Xid)
		w.i32(m.RelationID).i8(m.OldKind).tuple(m.Old...)
	case *Truncate:
		xid(m.Xid)
		w.i32(uint32(len(m.RelationIDs))).i8(m.Options)
		for _, id := range m.RelationIDs {
			w.i32(id)
		}
	case *LogicalMessage:
		xid(m.Xid)
		w.i8(m.Flags).i64(uint64(m.LSN)).str(m.Prefix).i32(uint32(len(m.Content))).raw(m.Content)
	case *StreamStart:
		first := uint8(0)
		if m.FirstSegment {
			first = 1
		}
		w.i32(m.Xid).i8(first)
	case *StreamStop:
	case *StreamCommit:
		w.i32(m.Xid).i8(m.Flags).i64(uint64(m.CommitLSN)).i64(uint64(m.EndLSN)).ts(m.CommitTime)
	case *StreamAbort:
		w.i32(m.Xid).i32(m.SubXid)
		if m.HasAbortInfo {
			w.i64(uint64(m.AbortLSN)).ts(m.AbortTime)
		}
	case *BeginPrepare:
		w.i64(uint64(m.PrepareLSN)).i64(uint64(m.EndLSN)).ts(m.PrepareTime).i32(m.Xid).str(m.GID)
	case *Prepare:
		w.i8(m.Flags).i64(uint64(m.PrepareLSN)).i64(uint64(m.EndLSN)).ts(m.PrepareTime).i32(m.Xid).str(m.GID)
	case *StreamPrepare:
		w.i8(m.Flags).i64(uint64(m.PrepareLSN)).i64(uint64(m.EndLSN)).ts(m.PrepareTime).i32(m.Xid).str(m.GID)
	case *CommitPrepared:
		w.i8(m.Flags).i64(uint64(m.CommitLSN)).i64(uint64(m.EndLSN)).ts(m.CommitTime).i32(m.Xid).str(m.GID)
	case *RollbackPrepared:
		w.i8(m.Flags).i64(uint64(m.PrepareEndLSN)).i64(uint64(m.RollbackEndLSN)).
			ts(m.PrepareTime).ts(m.RollbackTime).i32(m.Xid).str(m.GID)
	default:
		panic(fmt.Sprintf("encode: unexpected message %T", m))
	}
	return w.bytes()
}

// The encoder is a test oracle only if it agrees with the fixtures.
func TestEncodeMatchesFixtures(t *testing.T) {
	for _, fx := range decodeFixtures() {
		if got := encodeMessage(fx.want, fx.streamed); !bytes.Equal(got, fx.buf) {
			t.Errorf("%s: encode = %x, decodeFixture = %x", fx.name, got, fx.buf)
		}
	}
}
