package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

const (
	oidInt4 = 23
	oidText = 25
	oidByte = 17
)

// harness drives one Applier over an applytest.Sink and keeps one log of the
// sink's calls and the logical messages delivered, in the order they happened.
type harness struct {
	t     *testing.T
	s     *applytest.Sink
	cat   *schema.Catalog
	a     *Applier
	clock time.Time
	log   []string
}

func testConfig(t *testing.T) Config {
	return Config{Slot: "s1", GroupMaxRows: 1000, GroupMaxDelay: time.Hour, SpillDir: t.TempDir(), TwoPhase: true}
}

func newHarness(t *testing.T, cfg Config, s *applytest.Sink) *harness {
	t.Helper()
	return newHarnessFacts(t, cfg, s, applytest.NoFacts{})
}

// newHarnessFacts is newHarness with a catalog reading facts from facts.
func newHarnessFacts(t *testing.T, cfg Config, s *applytest.Sink, facts schema.FactReader) *harness {
	t.Helper()
	s.Calls() // what earlier harnesses on the same sink did is theirs to check
	h := &harness{t: t, s: s, cat: schema.NewCatalog(facts), clock: time.Unix(1700000000, 0)}
	cfg.OnLogicalMessage = func(_ context.Context, m *source.LogicalMessage, lsn source.LSN) error {
		h.drain()
		h.log = append(h.log, fmt.Sprintf("message %s %q at %s", m.Prefix, m.Content, lsn))
		if string(m.Content) == "stop" {
			return fmt.Errorf("marker seen: %w", ErrStop)
		}
		return nil
	}
	a, err := New(cfg, s, h.cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return h.clock }
	h.a = a
	if _, err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return h
}

func (h *harness) drain() { h.log = append(h.log, h.s.Calls()...) }

// feed hands messages to the applier, all at lsn, failing the test on error.
func (h *harness) feed(lsn source.LSN, msgs ...source.Message) {
	h.t.Helper()
	for _, m := range msgs {
		if err := h.a.Handle(context.Background(), lsn, m); err != nil {
			h.t.Fatalf("Handle(%T at %s): %v", m, lsn, err)
		}
	}
}

// expect checks the log since the last expect, exactly.
func (h *harness) expect(want ...string) {
	h.t.Helper()
	h.drain()
	got := h.log
	h.log = nil
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		h.t.Fatalf("calls:\n  got:\n\t%s\n  want:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func (h *harness) flush() {
	h.t.Helper()
	if err := h.a.Flush(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) durable(want source.LSN) {
	h.t.Helper()
	if got := h.a.Durable(); got != want {
		h.t.Fatalf("Durable() = %s, want %s", got, want)
	}
	if p := h.s.Stored().LSN; p < want {
		h.t.Fatalf("Durable() = %s passes the stored position %s", want, p)
	}
}

func (h *harness) noProblems() {
	h.t.Helper()
	if p := h.s.Problems(); len(p) > 0 {
		h.t.Fatalf("sink contract violations:\n\t%s", strings.Join(p, "\n\t"))
	}
}

// rel is relation id "t<id>" in public with an int4 key "id" and text columns.
func rel(id uint32, cols ...string) *source.Relation {
	r := &source.Relation{RelationID: id, Namespace: "public", Name: fmt.Sprintf("t%d", id), ReplicaIdentity: 'd',
		Columns: []source.RelationColumn{{Flags: source.ColumnFlagKey, Name: "id", TypeOID: oidInt4, TypeMod: -1}}}
	for _, c := range cols {
		r.Columns = append(r.Columns, source.RelationColumn{Name: c, TypeOID: oidText, TypeMod: -1})
	}
	return r
}

func tup(vals ...string) source.Tuple {
	t := make(source.Tuple, len(vals))
	for i, v := range vals {
		switch v {
		case "null":
			t[i] = source.Value{Kind: source.ValueNull}
		case "toast":
			t[i] = source.Value{Kind: source.ValueUnchanged}
		default:
			t[i] = source.Value{Kind: source.ValueText, Data: []byte(v)}
		}
	}
	return t
}

func ins(relid uint32, vals ...string) *source.Insert {
	return &source.Insert{RelationID: relid, New: tup(vals...)}
}

func sins(xid, relid uint32, vals ...string) *source.Insert {
	return &source.Insert{Xid: xid, RelationID: relid, New: tup(vals...)}
}

func begin(xid uint32, final source.LSN) *source.Begin {
	return &source.Begin{Xid: xid, FinalLSN: final}
}

func commit(final, end source.LSN) *source.Commit {
	return &source.Commit{CommitLSN: final, EndLSN: end}
}

// txn feeds one plain transaction whose commit record is at commitAt and ends at
// commitAt+8, inserting one row into table 1 per value.
func (h *harness) txn(xid uint32, commitAt source.LSN, vals ...string) {
	h.t.Helper()
	h.feed(commitAt-1, begin(xid, commitAt))
	for _, v := range vals {
		h.feed(commitAt-1, ins(1, v, "v"+v))
	}
	h.feed(commitAt+8, commit(commitAt, commitAt+8))
}

const t1 = "public.t1(id integer*,v text)"
