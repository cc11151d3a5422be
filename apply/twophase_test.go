package apply

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

const gid7 = "pgrelay_s1_7"

func beginPrepare(xid uint32, prepareAt source.LSN) *source.BeginPrepare {
	return &source.BeginPrepare{Xid: xid, PrepareLSN: prepareAt, EndLSN: prepareAt + 8, GID: "user-gid"}
}

func prepare(xid uint32, prepareAt source.LSN) *source.Prepare {
	return &source.Prepare{Xid: xid, PrepareLSN: prepareAt, EndLSN: prepareAt + 8, GID: "user-gid"}
}

func commitPrepared(xid uint32, at source.LSN) *source.CommitPrepared {
	return &source.CommitPrepared{Xid: xid, CommitLSN: at, EndLSN: at + 8, GID: "user-gid"}
}

func (h *harness) committed(want ...string) {
	h.t.Helper()
	if got := h.s.Committed(); strings.Join(got, "|") != strings.Join(want, "|") {
		h.t.Fatalf("committed:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestTwoPhaseRestartBeforePrepare(t *testing.T) {
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"))
	// The open group is committed first: a prepared transaction is its own.
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
		"commit 0/108", "begin", "insert public.t1 (70,p)")
	s.Crash()

	h2 := newHarness(t, testConfig(t), s)
	h2.feed(0x10, rel(1, "v"))
	h2.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
	h2.durable(0x108) // the prepare is not stored yet
	h2.flush()
	h2.durable(0x208)
	h2.feed(0x300, commitPrepared(7, 0x300))
	h2.durable(0x308)
	h2.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (70,p)",
		"prepare "+gid7+" 0/208", "begin", "commit 0/208", "commit-prepared "+gid7+" 0/308")
	h2.committed("insert public.t1 (1,v1)", "insert public.t1 (70,p)")
	h2.noProblems()
}

// TestTwoPhaseBeginPrepared: a sink that must know at its start that a
// transaction will be prepared (MySQL's XA START) is told, with the GID;
// transactions that are not prepared begin as before.
func TestTwoPhaseBeginPrepared(t *testing.T) {
	s := applytest.New(0)
	s.PreparedBegin = true
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
	h.feed(0x300, commitPrepared(7, 0x300))
	h.flush()
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
		"commit 0/108", "begin-prepared "+gid7, "insert public.t1 (70,p)", "prepare "+gid7+" 0/208", "commit-prepared "+gid7+" 0/308")
	h.noProblems()
}

// prepared7 is a fake target holding transaction 7 (a row of t1) prepared,
// and, with laterCommit, transaction 8 committed after it, the stored
// position past the prepare.
func prepared7(t *testing.T, laterCommit bool) *applytest.Sink {
	t.Helper()
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
	if laterCommit {
		h.txn(8, 0x250, "8")
		h.flush()
		h.durable(0x258)
	}
	return s
}

func TestTwoPhaseRestartPrepared(t *testing.T) {
	for _, laterCommit := range []bool{false, true} {
		t.Run(map[bool]string{false: "position before prepare", true: "position past prepare"}[laterCommit], func(t *testing.T) {
			s := prepared7(t, laterCommit)
			s.Crash()
			if got := s.Prepared(); len(got) != 1 || got[0] != gid7 {
				t.Fatalf("prepared on target: %q", got)
			}

			h2 := newHarness(t, testConfig(t), s)
			h2.feed(0x10, rel(1, "v"))
			if !laterCommit {
				// The source sends the body again: it is on the target already.
				h2.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
			}
			h2.feed(0x300, commitPrepared(7, 0x300))
			h2.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "commit-prepared "+gid7+" 0/308")
			h2.durable(0x308)
			if laterCommit {
				h2.committed("insert public.t1 (8,v8)", "insert public.t1 (70,p)")
			} else {
				h2.committed("insert public.t1 (70,p)")
			}
			h2.noProblems()
		})
	}
}

// TestTwoPhasePreparedBeforeStart: a transaction prepared before the slot's
// consistent point (where the snapshot copy's position is) and committed
// after it is not in the copy; the source skips it at its PREPARE and sends
// it whole right before its COMMIT PREPARED, with a prepare position before
// the stored one. It is applied then, once: a second send after a restart
// (the body again, then the Commit Prepared at or before the stored
// position) changes nothing. So does the send again of a transaction that
// was prepared and committed on the target before the stored position.
func TestTwoPhasePreparedBeforeStart(t *testing.T) {
	s := applytest.New(0x258) // the snapshot copy's position
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x2f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200), commitPrepared(7, 0x300))
	h.txn(8, 0x350, "8")
	h.flush()
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil",
		"begin", "insert public.t1 (70,p)", "insert public.t1 (8,v8)", "commit 0/358")
	h.durable(0x358)
	if len(s.Prepared()) != 0 {
		t.Fatalf("prepared on the target: %q", s.Prepared())
	}
	s.Crash()

	h2 := newHarness(t, testConfig(t), s)
	h2.feed(0x10, rel(1, "v"))
	h2.feed(0x2f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200), commitPrepared(7, 0x300))
	// Prepared after the consistent point and committed before the stored
	// position, its bookkeeping on the target gone: sent again, dropped.
	h2.feed(0x310, beginPrepare(9, 0x320), ins(1, "90", "q"), prepare(9, 0x320), commitPrepared(9, 0x340))
	h2.txn(10, 0x400, "10")
	h2.flush()
	h2.durable(0x408)
	h2.committed("insert public.t1 (70,p)", "insert public.t1 (8,v8)", "insert public.t1 (10,v10)")
	h2.noProblems()
}

func TestTwoPhaseCommittedBeforePositionStored(t *testing.T) {
	// COMMIT PREPARED went through but the position was not stored with it:
	// the source sends the body again, which must not be applied twice, and
	// the Commit Prepared. The position is before the prepare, or (a later
	// transaction moved it) past it.
	for _, laterCommit := range []bool{false, true} {
		t.Run(map[bool]string{false: "position before prepare", true: "position past prepare"}[laterCommit], func(t *testing.T) {
			s := prepared7(t, laterCommit)
			want := []string{"insert public.t1 (70,p)"}
			if laterCommit {
				want = []string{"insert public.t1 (8,v8)", "insert public.t1 (70,p)"}
			}
			s.CommitPreparedLosingPosition(gid7)
			s.Crash()

			h2 := newHarness(t, testConfig(t), s)
			h2.feed(0x10, rel(1, "v"))
			h2.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
			h2.feed(0x300, commitPrepared(7, 0x300))
			h2.flush()
			h2.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "commit 0/308")
			h2.durable(0x308)
			h2.committed(want...)
			h2.noProblems()
		})
	}
}

func TestTwoPhaseRollbackAndMessages(t *testing.T) {
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"),
		&source.LogicalMessage{Flags: 1, LSN: 0x1f1, Prefix: "p", Content: []byte("prepared-msg")}, prepare(7, 0x200))
	h.feed(0x2f0, beginPrepare(9, 0x300), ins(1, "90", "q"), prepare(9, 0x300))
	h.feed(0x400, &source.RollbackPrepared{Xid: 9, PrepareEndLSN: 0x308, RollbackEndLSN: 0x408})
	h.feed(0x500, commitPrepared(7, 0x500))
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil",
		"begin", "insert public.t1 (70,p)", "prepare "+gid7+" 0/208",
		"begin", "insert public.t1 (90,q)", "prepare pgrelay_s1_9 0/308",
		"rollback-prepared pgrelay_s1_9 0/408",
		"commit-prepared "+gid7+" 0/508", `message p "prepared-msg" at 0/508`)
	h.committed("insert public.t1 (70,p)")
	h.durable(0x508)
	if len(s.Prepared()) != 0 {
		t.Fatal("prepared transactions left")
	}
	h.noProblems()
}

func TestStreamPrepare(t *testing.T) {
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.feed(0x110, &source.StreamStart{Xid: 9, FirstSegment: true}, sins(9, 1, "90", "a"), sins(10, 1, "91", "sub"), &source.StreamStop{})
	h.feed(0x120, &source.StreamAbort{Xid: 9, SubXid: 10})
	h.feed(0x130, &source.StreamStart{Xid: 9}, sins(9, 1, "92", "b"), &source.StreamStop{})
	h.feed(0x200, &source.StreamPrepare{Xid: 9, PrepareLSN: 0x200, EndLSN: 0x208})
	h.feed(0x300, commitPrepared(9, 0x300))
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
		"commit 0/108", "begin", "insert public.t1 (90,a)", "insert public.t1 (92,b)", "prepare pgrelay_s1_9 0/208",
		"commit-prepared pgrelay_s1_9 0/308")
	h.durable(0x308)
	h.noProblems()
}

func TestPreparedWithoutTwoPhase(t *testing.T) {
	cfg := testConfig(t)
	cfg.TwoPhase = false
	s := applytest.New(0)
	h := newHarness(t, cfg, s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
	h.feed(0x210, &source.StreamStart{Xid: 9, FirstSegment: true}, sins(9, 1, "90", "s"), &source.StreamStop{},
		&source.StreamPrepare{Xid: 9, PrepareLSN: 0x220, EndLSN: 0x228})
	// A transaction committing after the prepare but before COMMIT PREPARED is
	// visible first on the source, so it is applied first.
	h.txn(8, 0x250, "8")
	h.feed(0x300, commitPrepared(7, 0x300))
	h.feed(0x310, &source.RollbackPrepared{Xid: 9, PrepareEndLSN: 0x228, RollbackEndLSN: 0x318})
	h.flush()
	h.expect("setup s1", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (8,v8)", "insert public.t1 (70,p)", "commit 0/318")
	h.durable(0x318)
	if len(s.Prepared()) != 0 {
		t.Fatal("prepared on a target told not to")
	}

	// After a restart past the prepare the source sends only the Commit
	// Prepared: its changes are lost, which must stop apply loudly.
	h2 := newHarness(t, cfg, applytest.New(0x258))
	err := h2.a.Handle(context.Background(), 0x400, commitPrepared(10, 0x400))
	if err == nil || !strings.Contains(err.Error(), "not on the target") {
		t.Fatalf("got %v", err)
	}
	h.noProblems()
}

func TestGIDs(t *testing.T) {
	long := strings.Repeat("a", 63)
	if g := sink.GID(long, ^uint32(0)); len(g) != sink.MaxGIDLen || sink.MaxGIDLen > 200 {
		t.Fatalf("GID %q has %d bytes, MaxGIDLen %d", g, len(g), sink.MaxGIDLen)
	}
	// Another slot whose name extends ours keeps its prepared transactions.
	s := applytest.New(0)
	cfg := testConfig(t)
	cfg.Slot = "s1_x"
	other := newHarness(t, cfg, s)
	other.feed(0x10, rel(1, "v"), beginPrepare(5, 0x200), ins(1, "5", "x"), prepare(5, 0x200))
	h := newHarness(t, testConfig(t), s)
	if len(h.a.prepared.onTarget) != 0 {
		t.Fatalf("took another slot's prepared transactions: %v", h.a.prepared.onTarget)
	}
}

// waitFacts knows t1 as (id int4, v text) and records WaitCommitted calls.
type waitFacts struct {
	applytest.NoFacts
	waits    []uint32
	finished map[uint32]bool // committed or rolled back on the source (StillPrepared)
}

func (f *waitFacts) TableFacts(_ context.Context, _, table string) (schema.TableFacts, error) {
	if table != "t1" {
		return schema.TableFacts{}, nil
	}
	return schema.TableFacts{Columns: map[string]schema.ColumnFacts{
		"id": {TypeOID: oidInt4, TypeName: "integer", Attnum: 1},
		"v":  {TypeOID: oidText, TypeName: "text", Attnum: 2},
	}}, nil
}

func (f *waitFacts) WaitCommitted(_ context.Context, xid uint32) error {
	f.waits = append(f.waits, xid)
	return nil
}

// StillPrepared: every transaction is, but those in finished.
func (f *waitFacts) StillPrepared(_ context.Context, xid uint32) (bool, error) {
	return !f.finished[xid], nil
}

// preparedFactsHarness applies two-phase to a fake sink, with waitFacts as
// the source catalog.
func preparedFactsHarness(t *testing.T) (*harness, *waitFacts) {
	t.Helper()
	f := &waitFacts{}
	cfg := testConfig(t)
	cfg.TwoPhase = true
	return newHarnessFacts(t, cfg, applytest.New(0), f), f
}

// A prepared transaction's Relation message never waits for the
// transaction's commit, which cannot come before COMMIT PREPARED. A column it
// adds that the committed catalog lacks (DDL of the transaction itself) is
// added empty, and the sink is told to fill its older rows at commit.
func TestPreparedRelationDefersFill(t *testing.T) {
	h, f := preparedFactsHarness(t)
	h.feed(0x1f0, beginPrepare(7, 0x200), rel(1, "v"), ins(1, "70", "p"), prepare(7, 0x200))
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(1, "v", "added"), ins(1, "80", "q", "r"), prepare(8, 0x300))
	if len(f.waits) != 0 {
		t.Fatalf("waited for prepared transaction(s) %v", f.waits)
	}
	// The first one's table, which the committed catalog has, is created in
	// a target transaction of its own, before the prepared one begins (see
	// TestE2EPreparedCommittedDDLOutside); the second one's column, its own
	// DDL, is added inside it.
	h.expect("setup s1", "prepared-gids pgrelay_s1_",
		"ensure "+t1+" prev=nil", "begin", "insert public.t1 (70,p)", "prepare pgrelay_s1_7 0/208",
		"begin", "ensure public.t1(id integer*,v text,added text) prev="+t1, "defer-fill pgrelay_s1_8 public.t1 added",
		"insert public.t1 (80,q,r)", "prepare pgrelay_s1_8 0/308")
	// A plain transaction still waits, briefly, for its commit to be visible.
	h.feed(0x3f0, begin(9, 0x400), rel(1, "v"), ins(1, "90", "s"), commit(0x400, 0x408))
	if len(f.waits) != 1 || f.waits[0] != 9 {
		t.Fatalf("waits %v, want [9]", f.waits)
	}
	h.noProblems()
}

// After a restart the first Relation message of a table may come inside a
// prepared transaction that added a column (the slot resumed past an earlier
// prepared transaction of the table, whose messages are not sent again): the
// column the committed catalog lacks is still filled at commit. A table the
// committed catalog does not know at all is new: nothing to fill.
func TestPreparedRelationDefersFillFirstInSession(t *testing.T) {
	h, _ := preparedFactsHarness(t)
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(1, "v", "added"), ins(1, "80", "q", "r"), prepare(8, 0x300))
	h.feed(0x3f0, beginPrepare(9, 0x400), rel(2, "v"), prepare(9, 0x400))
	h.expect("setup s1", "prepared-gids pgrelay_s1_",
		"begin", "ensure public.t1(id integer*,v text,added text) prev=nil", "defer-fill pgrelay_s1_8 public.t1 added",
		"insert public.t1 (80,q,r)", "prepare pgrelay_s1_8 0/308",
		"begin", "ensure public.t2(id integer*,v text) prev=nil", "prepare pgrelay_s1_9 0/408")
	h.noProblems()
}

// A prepared transaction whose body fails to apply is left out when the
// source says it was rolled back (its body may have arrived incomplete), and
// stops apply otherwise.
func TestPreparedAbortedBodyLeftOut(t *testing.T) {
	for _, aborted := range []bool{true, false} {
		s := applytest.New(0)
		s.Fail = func(call string) error {
			if call == "insert public.t1 (71,q)" {
				return errors.New("row not found on the target")
			}
			return nil
		}
		cfg := testConfig(t)
		cfg.TwoPhase = true
		var asked []uint32
		cfg.TxnAborted = func(_ context.Context, xid uint32) (bool, error) {
			asked = append(asked, xid)
			return aborted, nil
		}
		h := newHarness(t, cfg, s)
		h.feed(0x10, rel(1, "v"))
		h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"))
		err := h.a.Handle(context.Background(), 0x1f8, ins(1, "71", "q"))
		if !aborted {
			if err == nil {
				t.Fatal("a failed change of a prepared transaction the source did not roll back was ignored")
			}
			continue
		}
		if err != nil {
			t.Fatalf("aborted prepared transaction: %v", err)
		}
		h.feed(0x1f9, ins(1, "72", "r"), prepare(7, 0x200))
		h.feed(0x300, &source.RollbackPrepared{Xid: 7, PrepareEndLSN: 0x208, RollbackEndLSN: 0x308, GID: "user-gid"})
		h.flush()
		if len(asked) != 1 || asked[0] != 7 {
			t.Fatalf("asked about %v, want [7]", asked)
		}
		if got := s.Prepared(); len(got) != 0 {
			t.Fatalf("prepared on the target: %v", got)
		}
		h.durable(0x308)
		h.noProblems()
	}
}

// TestTwoPhaseRestartSyncsSkippedRelation: after a restart, the table's
// Relation message comes in the body of a transaction the target holds
// prepared already, which is not applied again; the plain transaction after
// it comes without one. Its change brings the target table up to the
// catalog's definition first (an enum label the source added since), or the
// label never reaches the target.
func TestTwoPhaseRestartSyncsSkippedRelation(t *testing.T) {
	s := applytest.New(0)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x1f0, beginPrepare(7, 0x200), ins(1, "70", "p"), prepare(7, 0x200))
	s.Crash()

	h2 := newHarness(t, testConfig(t), s)
	h2.feed(0x1f0, beginPrepare(7, 0x200), rel(1, "v"), ins(1, "70", "p"), prepare(7, 0x200))
	h2.txn(8, 0x250, "8")
	h2.txn(9, 0x260, "9")
	h2.flush()
	h2.expect("setup s1", "prepared-gids pgrelay_s1_", "begin", "ensure "+t1+" prev=nil", "insert public.t1 (8,v8)",
		"insert public.t1 (9,v9)", "commit 0/268")
	h2.noProblems()
}

// TestPreparedCommittedDDLWarning: DDL that the committed catalog shows,
// first seen in a prepared transaction after its first change, can only
// join the prepared transaction on the target: a warning says so. A table's
// first Relation message in a session is no such DDL (the target table may be
// as it is), and is not warned about.
func TestPreparedCommittedDDLWarning(t *testing.T) {
	h, _ := preparedFactsHarness(t)
	var logs bytes.Buffer
	h.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	// t2 is unknown to the committed catalog (DDL of the transaction's
	// own): its change begins the target transaction; t1 comes next.
	h.feed(0x1f0, beginPrepare(7, 0x200), rel(2, "w"), ins(2, "20", "a"), rel(1, "v"), ins(1, "70", "p"), prepare(7, 0x200))
	if strings.Contains(logs.String(), "change of definition") {
		t.Errorf("warned about a table's first Relation message of the session:\n%s", logs.String())
	}
	// t1's column type changed since (a typmod the committed catalog has).
	changed := rel(1, "v")
	changed.Columns[1].TypeMod = 54
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(2, "w"), ins(2, "21", "b"), changed, ins(1, "80", "q"), prepare(8, 0x300))
	if !strings.Contains(logs.String(), "change of definition") || !strings.Contains(logs.String(), "table=public.t1") {
		t.Errorf("no warning for committed DDL joining a prepared transaction:\n%s", logs.String())
	}
}

// A prepared transaction the source has finished before pgrelay reaches its
// Begin Prepare (stopped, or behind) is not prepared on the target: the
// source's catalog may be past it. It is held and applied at its Commit
// Prepared, after the transaction committed while it was prepared, which
// uses its Relation message (PostgreSQL does not send it again).
func TestPreparedFinishedOnSourceHeld(t *testing.T) {
	h, f := preparedFactsHarness(t)
	f.finished = map[uint32]bool{8: true}
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(1, "v"), ins(1, "80", "q"), prepare(8, 0x300))
	h.feed(0x3f0, begin(9, 0x400), ins(1, "90", "s"), commit(0x400, 0x408))
	h.feed(0x500, commitPrepared(8, 0x500))
	h.flush()
	h.expect("setup s1", "prepared-gids pgrelay_s1_",
		"begin", "ensure "+t1+" prev=nil", "insert public.t1 (90,s)",
		"insert public.t1 (80,q)", "commit 0/508")
	h.committed("insert public.t1 (90,s)", "insert public.t1 (80,q)")
	h.noProblems()
}

// One finished on the source while pgrelay applies it as prepared, with a
// Relation message the committed catalog disagrees with: that may be DDL
// committed after it, not its own. Apply stops with a retryable error; the
// next session holds it (above).
func TestPreparedFinishedWhileApplied(t *testing.T) {
	h, f := preparedFactsHarness(t)
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(1, "v"), ins(1, "80", "q"))
	f.finished = map[uint32]bool{8: true}
	err := h.a.Handle(context.Background(), 0x2f0, rel(1, "v", "added"))
	if !errors.Is(err, sink.ErrRetryable) || !strings.Contains(err.Error(), "committed or rolled back on the source while pgrelay applied it") {
		t.Fatalf("Relation message after the source finished the transaction: %v, want a retryable error saying so", err)
	}
}

// Held that way with DDL of its own (committed on the source since): the
// Relation message installed when it arrived comes again at its Commit
// Prepared, and the target table gets the DDL then, with the rows.
func TestPreparedFinishedOnSourceOwnDDL(t *testing.T) {
	h, f := preparedFactsHarness(t)
	f.finished = map[uint32]bool{8: true}
	h.feed(0x2f0, beginPrepare(8, 0x300), rel(1, "v", "added"), ins(1, "80", "q", "r"), prepare(8, 0x300))
	h.expect("setup s1", "prepared-gids pgrelay_s1_")
	h.feed(0x500, commitPrepared(8, 0x500))
	h.flush()
	h.expect("begin", "ensure public.t1(id integer*,v text,added text) prev=nil", "insert public.t1 (80,q,r)", "commit 0/508")
	h.noProblems()
}

// TestTwoPhaseRestartPreparedDDLCommits: on a target whose DDL commits
// implicitly, a restart with transaction 7 prepared there installs the
// relation 7 sends without touching the target; the next transaction's
// change to the table, which comes without a Relation message, brings the
// target table up to date before anything of it is applied, not while its
// target transaction is open.
func TestTwoPhaseRestartPreparedDDLCommits(t *testing.T) {
	s := applytest.New(0)
	s.NonTransactionalDDL, s.PreparedBegin = true, true
	h := newHarness(t, testConfig(t), s)
	h.feed(0x1f0, beginPrepare(7, 0x200), rel(1, "v"), ins(1, "70", "p"), prepare(7, 0x200))
	h.flush()
	s.Crash()

	h2 := newHarness(t, testConfig(t), s)
	h2.feed(0x1f0, beginPrepare(7, 0x200), rel(1, "v"), ins(1, "70", "p"), prepare(7, 0x200))
	h2.txn(9, 0x300, "9")
	h2.flush()
	h2.feed(0x400, commitPrepared(7, 0x400))
	h2.flush()
	h2.durable(0x408)
	h2.committed("insert public.t1 (9,v9)", "insert public.t1 (70,p)")
	h2.noProblems()
}
