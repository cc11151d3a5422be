package apply

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// wideRel is table t2: id int4 key, a text, b bytea, c text.
func wideRel() *source.Relation {
	return &source.Relation{RelationID: 2, Namespace: "public", Name: "t2", ReplicaIdentity: 'd', Columns: []source.RelationColumn{
		{Flags: source.ColumnFlagKey, Name: "id", TypeOID: oidInt4, TypeMod: -1},
		{Name: "a", TypeOID: oidText, TypeMod: -1},
		{Name: "b", TypeOID: oidByte, TypeMod: -1},
		{Name: "c", TypeOID: oidText, TypeMod: -1},
	}}
}

// randomTuple makes a row with every kind of value: binary with every byte, empty
// text, null, unchanged TOAST, long text.
func randomTuple(r *rand.Rand, id int) source.Tuple {
	t := source.Tuple{{Kind: source.ValueText, Data: []byte(fmt.Sprint(id))}}
	for range 3 {
		switch r.IntN(5) {
		case 0:
			t = append(t, source.Value{Kind: source.ValueNull})
		case 1:
			t = append(t, source.Value{Kind: source.ValueUnchanged})
		case 2:
			t = append(t, source.Value{Kind: source.ValueText, Data: []byte{}})
		case 3:
			b := make([]byte, r.IntN(300))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			t = append(t, source.Value{Kind: source.ValueBinary, Data: b})
		default:
			t = append(t, source.Value{Kind: source.ValueText, Data: bytes.Repeat([]byte{byte('a' + r.IntN(26))}, r.IntN(500))})
		}
	}
	return t
}

func spillFiles(t *testing.T, a *Applier) []string {
	t.Helper()
	if a.spool.dir == nil {
		return nil
	}
	entries, err := os.ReadDir(a.spool.dir.path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != spillLockName {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestSpillByteExact(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemoryLimit = 4096
	s := applytest.New(0)
	h := newHarness(t, cfg, s)
	r := rand.New(rand.NewPCG(1, 2))
	var want10 []string
	t2 := &schema.Table{Schema: "public", Name: "t2"}
	// The decoder reuses its buffers: inserts are fed through a reused tuple
	// whose bytes are overwritten after Handle, as the real decoder does.
	re := newReuser()
	feedRow := func(m source.Message, lsn source.LSN) {
		h.feed(lsn, m)
		re.clobber()
	}
	h.feed(0x100, &source.StreamStart{Xid: 10, FirstSegment: true}, wideRel())
	h.feed(0x101, &source.StreamStop{}, &source.StreamStart{Xid: 11, FirstSegment: true}, wideRel(), &source.StreamStop{})
	lsn := source.LSN(0x1000)
	for i := range 300 {
		xid := uint32(10 + i%2)
		h.feed(lsn, &source.StreamStart{Xid: xid})
		row := randomTuple(r, i)
		var m source.Message
		var line string
		switch i % 3 {
		case 0:
			m = &source.Insert{Xid: xid, RelationID: 2, New: re.tuple(row)}
			line = applytest.ChangeString(&sink.Change{Kind: sink.Insert, Table: t2, New: row})
		case 1:
			old := randomTuple(r, i-1)
			m = &source.Update{Xid: xid, RelationID: 2, OldKind: source.OldKey, Old: old, New: row}
			line = applytest.ChangeString(&sink.Change{Kind: sink.Update, Table: t2, OldKind: source.OldKey, Old: old, New: row})
		default:
			m = &source.Delete{Xid: xid, RelationID: 2, OldKind: source.OldFull, Old: row}
			line = applytest.ChangeString(&sink.Change{Kind: sink.Delete, Table: t2, OldKind: source.OldFull, Old: row})
		}
		feedRow(m, lsn)
		h.feed(lsn, &source.StreamStop{})
		if xid == 10 {
			want10 = append(want10, line)
		}
		lsn += 0x10
	}
	if h.a.spool.used > cfg.MemoryLimit {
		t.Fatalf("%d bytes in memory, limit %d", h.a.spool.used, cfg.MemoryLimit)
	}
	files := spillFiles(t, h.a)
	if len(files) != 2 {
		t.Fatalf("spill files %q, want one per transaction", files)
	}
	h.feed(lsn, &source.StreamCommit{Xid: 10, CommitLSN: lsn, EndLSN: lsn + 8})
	h.flush()
	if got := s.Committed(); !slices.Equal(got, want10) {
		t.Fatalf("replay differs: %d changes, want %d; first difference at %d", len(got), len(want10), firstDiff(got, want10))
	}
	if files := spillFiles(t, h.a); len(files) != 1 || !strings.HasPrefix(files[0], "xid-11-") {
		t.Fatalf("after commit of 10: spill files %q", files)
	}
	h.feed(lsn+0x10, &source.StreamAbort{Xid: 11, SubXid: 11})
	if files := spillFiles(t, h.a); len(files) != 0 {
		t.Fatalf("after abort of 11: spill files %q", files)
	}
	dir := h.a.spool.dir.path
	if err := h.a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("spill directory left after Close: %v", err)
	}
	h.noProblems()
}

// reuser hands out tuples whose bytes live in one arena, overwritten by clobber.
type reuser struct {
	arena []byte
	vals  source.Tuple
}

func newReuser() *reuser { return &reuser{arena: make([]byte, 0, 1<<16)} }

func (r *reuser) tuple(t source.Tuple) source.Tuple {
	r.arena = r.arena[:0]
	r.vals = r.vals[:0]
	for _, v := range t {
		if v.Data != nil {
			at := len(r.arena)
			r.arena = append(r.arena, v.Data...)
			v.Data = r.arena[at:len(r.arena):len(r.arena)]
		}
		r.vals = append(r.vals, v)
	}
	return r.vals
}

func (r *reuser) clobber() {
	a := r.arena[:cap(r.arena)]
	for i := range a {
		a[i] = 0xEE
	}
	for i := range r.vals {
		r.vals[i].Kind = 'x'
	}
}

func TestAppliedChangesAreOwned(t *testing.T) {
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	re := newReuser()
	h.feed(0x10, rel(1, "v"), begin(1, 0x100))
	for i := range 5 {
		h.feed(0x20, &source.Update{RelationID: 1, OldKind: source.OldKey, Old: re.tuple(tup(fmt.Sprint(i), "null")), New: tup(fmt.Sprint(i+1), "x")})
		re.clobber()
		h.feed(0x20, ins(1, fmt.Sprint(i), "y"))
	}
	h.feed(0x108, commit(0x100, 0x108))
	h.flush()
	h.noProblems()
	if got := s.Committed(); got[0] != "update public.t1 K(0,null) (1,x)" {
		t.Fatalf("got %q", got[0])
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestSpillCorruptionDetected(t *testing.T) {
	for _, damage := range []string{"flip", "truncate"} {
		t.Run(damage, func(t *testing.T) {
			sp := newSpool(t.TempDir(), "s1", 10)
			defer sp.close()
			b := sp.newBuffer(5)
			for i := range 10 {
				if err := b.addInsert(&source.Insert{RelationID: 1, New: tup(fmt.Sprint(i), "value")}, 5, source.LSN(i)); err != nil {
					t.Fatal(err)
				}
			}
			if b.file == nil || len(b.mem) != 0 {
				t.Fatal("not spilled")
			}
			data, err := os.ReadFile(b.path)
			if err != nil {
				t.Fatal(err)
			}
			if damage == "flip" {
				data[len(data)-3] ^= 0x40
			} else {
				data = data[:len(data)-3]
			}
			if err := os.WriteFile(b.path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			err = b.each(func(*record) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), b.path) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	sp := newSpool(t.TempDir(), "s1", 1<<20)
	defer sp.close()
	b := sp.newBuffer(5)
	r := rand.New(rand.NewPCG(3, 4))
	rel := wideRel()
	msg := &source.LogicalMessage{Flags: 1, LSN: 77, Prefix: "pfx", Content: []byte{0, 1, 2}}
	trunc := &source.Truncate{Options: 3, RelationIDs: []uint32{1, 2, 3}}
	upd := &source.Update{RelationID: 2, New: randomTuple(r, 1)} // no old tuple
	del := &source.Delete{RelationID: 2, OldKind: source.OldKey, Old: source.Tuple{}}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.addRelation(rel, 1))
	must(b.addMessage(msg, 6, 2))
	must(b.addTruncate(trunc, 5, 3))
	must(b.addUpdate(upd, 7, 4))
	must(b.addDelete(del, 5, 5))
	var got []*record
	must(b.each(func(rec *record) error { got = append(got, rec); return nil }))
	if len(got) != 5 {
		t.Fatalf("%d records", len(got))
	}
	if got[0].relation != rel || got[0].lsn != 1 {
		t.Errorf("relation record %+v", got[0])
	}
	if m := got[1].msg; m.Prefix != "pfx" || !bytes.Equal(m.Content, msg.Content) || m.LSN != 77 || m.Flags != 1 || got[1].subxid != 6 {
		t.Errorf("message record %+v", m)
	}
	if g := got[2]; g.options != 3 || !slices.Equal(g.relids, trunc.RelationIDs) {
		t.Errorf("truncate record %+v", g)
	}
	if g := got[3]; g.old != nil || g.oldKind != 0 || applytest.TupleString(g.new) != applytest.TupleString(upd.New) || g.subxid != 7 {
		t.Errorf("update record %+v", g)
	}
	if g := got[4]; g.old == nil || len(g.old) != 0 || g.oldKind != source.OldKey {
		t.Errorf("delete record %+v", g)
	}
	// Aborting a subtransaction hides its records but never a relation.
	b.abortSub(6)
	b.abortSub(5)
	got = nil
	must(b.each(func(rec *record) error { got = append(got, rec); return nil }))
	if len(got) != 2 || got[0].kind != recRelation || got[1].kind != recUpdate {
		t.Fatalf("after abort: %d records", len(got))
	}
}

func TestStaleSpillDirs(t *testing.T) {
	parent := t.TempDir()
	live, err := createSpillDir(parent, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	stale := filepath.Join(parent, "s1-dead")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, spillLockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "xid-1-1.spill"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	otherSlot := filepath.Join(parent, "s1_b-dead")
	if err := os.MkdirAll(otherSlot, 0o700); err != nil {
		t.Fatal(err)
	}
	n, err := removeStaleSpillDirs(parent, "s1")
	if err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	for path, exists := range map[string]bool{stale: false, live.path: true, otherSlot: true} {
		if _, err := os.Stat(path); (err == nil) != exists {
			t.Errorf("%s: exists=%v, want %v", path, err == nil, exists)
		}
	}
}
