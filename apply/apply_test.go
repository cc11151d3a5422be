package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

func TestGroupBounds(t *testing.T) {
	cfg := testConfig(t)
	cfg.GroupMaxRows = 3
	cfg.GroupMaxDelay = time.Second
	h := newHarness(t, cfg, applytest.New(0))
	h.expect("setup s1", "prepared-gids pgrelay_s1_")

	h.feed(0x100, begin(1, 0x110), rel(1, "v"), ins(1, "1", "a"), commit(0x110, 0x118))
	h.txn(2, 0x120, "2")
	h.durable(0)
	// The third transaction crosses the bound at its first row; the group is
	// committed only at its end (never split).
	h.feed(0x12f, begin(3, 0x130), ins(1, "3", "c"))
	h.expect("begin", "ensure "+t1+" prev=nil", "insert public.t1 (1,a)", "insert public.t1 (2,v2)", "insert public.t1 (3,c)")
	h.feed(0x12f, ins(1, "4", "d"), commit(0x130, 0x138))
	h.expect("insert public.t1 (4,d)", "commit 0/138")
	// The sink may still be committing (sink.AsyncCommitter): durable once
	// settled, at the next commit or flush.
	h.durable(0)
	if err := h.a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.durable(0x138)

	// A transaction larger than the bound is committed at its end, alone.
	h.txn(4, 0x140, "5", "6", "7", "8", "9")
	h.expect("begin", "insert public.t1 (5,v5)", "insert public.t1 (6,v6)", "insert public.t1 (7,v7)",
		"insert public.t1 (8,v8)", "insert public.t1 (9,v9)", "commit 0/148")

	// Time bound: the group is committed at the end of the first transaction
	// after GroupMaxDelay.
	h.txn(5, 0x150, "10")
	h.clock = h.clock.Add(999 * time.Millisecond)
	h.txn(6, 0x160, "11")
	h.expect("begin", "insert public.t1 (10,v10)", "insert public.t1 (11,v11)")
	h.clock = h.clock.Add(time.Millisecond)
	h.txn(7, 0x170, "12")
	h.expect("insert public.t1 (12,v12)", "commit 0/178")

	// Idle: Flush commits the open group; with nothing open it does nothing.
	h.txn(8, 0x180, "13")
	h.flush()
	h.flush()
	h.expect("begin", "insert public.t1 (13,v13)", "commit 0/188")
	h.durable(0x188)
	h.noProblems()
}

func TestFlushInsideTransactionWaits(t *testing.T) {
	h := newHarness(t, testConfig(t), applytest.New(0))
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.feed(0x10f, begin(2, 0x110), ins(1, "2", "b"))
	h.flush() // transaction 2 is half applied: nothing may be committed
	h.durable(0)
	h.feed(0x118, commit(0x110, 0x118))
	h.flush()
	h.durable(0x118)
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
		"insert public.t1 (2,b)", "commit 0/118")
}

func TestSkipUpToStoredPosition(t *testing.T) {
	// The target holds everything up to 0x128, the end of transaction 2.
	s := applytest.New(0x128)
	h := newHarness(t, testConfig(t), s)
	h.feed(0xff, begin(1, 0x110), rel(1, "v"), ins(1, "1", "a"), commit(0x110, 0x118))
	h.feed(0x11f, begin(2, 0x120), ins(1, "2", "b"), commit(0x120, 0x128))
	// A commit record starting exactly at the stored position ends after it.
	h.feed(0x127, begin(3, 0x128), ins(1, "3", "c"), commit(0x128, 0x130))
	h.flush()
	// The skipped transaction's relation is still installed, later ones rely
	// on it, but its DDL is not run with it: the target has it. The first
	// change applied checks the target table against it (from the table's
	// stored definition: prev nil), for what the source changed since.
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "begin", "ensure "+t1+" prev=nil", "insert public.t1 (3,c)", "commit 0/130")
	h.durable(0x130)

	// A skipped transaction that would end after the position is a contradiction.
	h2 := newHarness(t, testConfig(t), applytest.New(0x128))
	h2.feed(0x10, rel(1, "v"), begin(4, 0x120))
	err := h2.a.Handle(context.Background(), 0x130, commit(0x120, 0x130))
	if err == nil || !strings.Contains(err.Error(), "not a WAL record boundary") {
		t.Fatalf("got %v", err)
	}
}

func TestRestartExactlyOnce(t *testing.T) {
	s := applytest.New(0)
	cfg := testConfig(t)
	cfg.GroupMaxRows = 2
	h := newHarness(t, cfg, s)
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.txn(2, 0x110, "2") // group committed: position 0x118
	h.txn(3, 0x120, "3") // in the open group, lost in the crash
	s.Crash()
	if p := s.Stored().LSN; p != 0x118 {
		t.Fatalf("stored position %s, want 0/118", p)
	}

	// The source resends from the stored position; with a fresh catalog, the
	// relation comes again.
	h2 := newHarness(t, cfg, s)
	h2.feed(0x10, rel(1, "v"))
	h2.txn(2, 0x110, "2") // would not be resent in reality; still skipped
	h2.txn(3, 0x120, "3")
	h2.flush()
	want := []string{"insert public.t1 (1,v1)", "insert public.t1 (2,v2)", "insert public.t1 (3,v3)"}
	if got := s.Committed(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("committed %q, want %q", got, want)
	}
	h2.durable(0x128)
	h2.noProblems()
}

func TestStreamedInterleaved(t *testing.T) {
	h := newHarness(t, testConfig(t), applytest.New(0))
	h.feed(0x10, rel(1, "v"))
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil")
	h.feed(0x100, &source.StreamStart{Xid: 10, FirstSegment: true}, rel(1, "v"), sins(10, 1, "1", "x10a"), &source.StreamStop{})
	h.feed(0x110, &source.StreamStart{Xid: 11, FirstSegment: true}, rel(1, "v"), sins(11, 1, "2", "x11a"), &source.StreamStop{})
	h.txn(5, 0x120, "3") // a plain transaction commits meanwhile
	h.feed(0x130, &source.StreamStart{Xid: 10}, sins(10, 1, "4", "x10b"), &source.StreamStop{})
	h.feed(0x140, &source.StreamStart{Xid: 11}, sins(11, 1, "5", "x11b"), &source.StreamStop{})
	h.feed(0x150, &source.StreamCommit{Xid: 11, CommitLSN: 0x150, EndLSN: 0x158})
	h.feed(0x160, &source.StreamCommit{Xid: 10, CommitLSN: 0x160, EndLSN: 0x168})
	h.flush()
	h.expect("begin", "insert public.t1 (3,v3)",
		"insert public.t1 (2,x11a)", "insert public.t1 (5,x11b)",
		"insert public.t1 (1,x10a)", "insert public.t1 (4,x10b)", "commit 0/168")
	h.durable(0x168)
	if h.a.spool.used != 0 || len(h.a.spool.buffers) != 0 {
		t.Fatalf("buffers left: %d bytes in %d", h.a.spool.used, len(h.a.spool.buffers))
	}
	h.noProblems()
}

func TestStreamSubtransactionAbort(t *testing.T) {
	h := newHarness(t, testConfig(t), applytest.New(0))
	h.feed(0x100, &source.StreamStart{Xid: 10, FirstSegment: true},
		rel(1, "v"), sins(10, 1, "1", "top"), sins(11, 1, "2", "sub11"), sins(12, 1, "3", "sub12"),
		&source.StreamStop{})
	h.feed(0x110, &source.StreamStart{Xid: 10}, sins(11, 1, "4", "sub11b"), sins(13, 1, "5", "sub13"), &source.StreamStop{})
	h.feed(0x120, &source.StreamAbort{Xid: 10, SubXid: 11})
	h.feed(0x130, &source.StreamStart{Xid: 10}, sins(10, 1, "6", "top2"), &source.StreamStop{})
	h.feed(0x140, &source.StreamAbort{Xid: 10, SubXid: 13})
	h.feed(0x150, &source.StreamCommit{Xid: 10, CommitLSN: 0x150, EndLSN: 0x158})
	h.flush()
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "begin", "ensure "+t1+" prev=nil",
		"insert public.t1 (1,top)", "insert public.t1 (3,sub12)", "insert public.t1 (6,top2)", "commit 0/158")

	// Whole abort: nothing reaches the target.
	h.feed(0x200, &source.StreamStart{Xid: 20, FirstSegment: true}, sins(20, 1, "7", "gone"), sins(21, 1, "8", "gone"), &source.StreamStop{})
	h.feed(0x210, &source.StreamAbort{Xid: 20, SubXid: 20})
	h.flush()
	h.expect()
	if len(h.a.streams.bufs) != 0 || h.a.spool.used != 0 {
		t.Fatalf("aborted transaction still buffered")
	}
	// Its Stream Commit can no longer come: it would be a protocol error.
	err := h.a.Handle(context.Background(), 0x220, &source.StreamCommit{Xid: 20, CommitLSN: 0x220, EndLSN: 0x228})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v", err)
	}
}

func TestStreamSkippedOnRestartInstallsRelations(t *testing.T) {
	h := newHarness(t, testConfig(t), applytest.New(0x200))
	h.feed(0x100, &source.StreamStart{Xid: 10, FirstSegment: true}, rel(1, "v"), sins(10, 1, "1", "a"), &source.StreamStop{})
	h.feed(0x150, &source.StreamCommit{Xid: 10, CommitLSN: 0x150, EndLSN: 0x158})
	h.feed(0x20f, begin(11, 0x210), ins(1, "2", "b"), commit(0x210, 0x218))
	h.flush()
	// Installed without DDL: the target has the skipped transaction's. The
	// first change applied checks the target table against it.
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "begin", "ensure "+t1+" prev=nil", "insert public.t1 (2,b)", "commit 0/218")
}

func TestDDLMidStream(t *testing.T) {
	for _, nonTx := range []bool{false, true} {
		t.Run(map[bool]string{false: "transactional", true: "implicit-commit"}[nonTx], func(t *testing.T) {
			s := applytest.New(0)
			s.NonTransactionalDDL = nonTx
			h := newHarness(t, testConfig(t), s)
			h.feed(0x10, rel(1, "v"))
			h.txn(1, 0x100, "1")
			h.feed(0x110, &source.StreamStart{Xid: 10, FirstSegment: true}, rel(1, "v"), sins(10, 1, "2", "old"), &source.StreamStop{})
			h.feed(0x120, &source.StreamStart{Xid: 10}, rel(1, "v", "w"), sins(10, 1, "3", "new", "w3"), &source.StreamStop{})
			h.feed(0x130, &source.StreamCommit{Xid: 10, CommitLSN: 0x130, EndLSN: 0x138})
			h.flush()
			t2 := "public.t1(id integer*,v text,w text)"
			if !nonTx {
				h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
					"insert public.t1 (2,old)", "ensure "+t2+" prev="+t1, "insert public.t1 (3,new,w3)", "commit 0/138")
			} else {
				// The group is committed before the DDL, which runs before the
				// transaction's changes, with no transaction open.
				h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,v1)",
					"commit 0/108", "ensure "+t2+" prev="+t1, "begin", "insert public.t1 (2,old)", "insert public.t1 (3,new,w3)", "commit 0/138")
			}
			// A plain transaction whose relation changed half way.
			h.feed(0x140, begin(11, 0x150), ins(1, "4", "a", "b"), rel(1, "v"), ins(1, "5", "c"), commit(0x150, 0x158))
			h.flush()
			if !nonTx {
				h.expect("begin", "insert public.t1 (4,a,b)", "ensure "+t1+" prev="+t2, "insert public.t1 (5,c)", "commit 0/158")
			} else {
				h.expect("ensure "+t1+" prev="+t2, "begin", "insert public.t1 (4,a,b)", "insert public.t1 (5,c)", "commit 0/158")
			}
			h.noProblems()
		})
	}
}

func TestLogicalMessages(t *testing.T) {
	h := newHarness(t, testConfig(t), applytest.New(0))
	h.feed(0x10, rel(1, "v"))
	h.feed(0xff, begin(1, 0x100), ins(1, "1", "a"),
		&source.LogicalMessage{Flags: 1, LSN: 0xf0, Prefix: "p", Content: []byte("in-txn-1")},
		ins(1, "2", "b"), commit(0x100, 0x108))
	// Not yet: its transaction is not committed.
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,a)", "insert public.t1 (2,b)")
	// A non-transactional message commits what came before it, then arrives.
	h.feed(0x110, &source.LogicalMessage{LSN: 0x110, Prefix: "p", Content: []byte("marker")})
	h.expect("commit 0/108", `message p "in-txn-1" at 0/108`, `message p "marker" at 0/110`)
	// Transactional messages in a streamed transaction, one in an aborted subtransaction.
	h.feed(0x120, &source.StreamStart{Xid: 10, FirstSegment: true},
		&source.LogicalMessage{Xid: 10, Flags: 1, LSN: 0x121, Prefix: "p", Content: []byte("stream-top")},
		&source.LogicalMessage{Xid: 11, Flags: 1, LSN: 0x122, Prefix: "p", Content: []byte("stream-aborted")},
		sins(10, 1, "3", "c"), &source.StreamStop{}, &source.StreamAbort{Xid: 10, SubXid: 11},
		&source.StreamCommit{Xid: 10, CommitLSN: 0x130, EndLSN: 0x138})
	h.feed(0x140, begin(2, 0x140), &source.LogicalMessage{Flags: 1, LSN: 0x13f, Prefix: "q", Content: []byte("second")}, commit(0x140, 0x148))
	h.flush()
	h.expect("begin", "insert public.t1 (3,c)", "commit 0/148", `message p "stream-top" at 0/138`, `message q "second" at 0/148`)

	// A stop request from the handler: Handle returns it, the applier stays usable.
	err := h.a.Handle(context.Background(), 0x150, &source.LogicalMessage{LSN: 0x150, Prefix: "p", Content: []byte("stop")})
	if !errors.Is(err, ErrStop) {
		t.Fatalf("got %v", err)
	}
	h.expect(`message p "stop" at 0/150`)
	h.txn(3, 0x160, "4")
	h.flush()
	h.expect("begin", "insert public.t1 (4,v4)", "commit 0/168")
	// A transactional message outside a transaction is out of place.
	err = h.a.Handle(context.Background(), 0x170, &source.LogicalMessage{Flags: 1, LSN: 0x170, Prefix: "p"})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v", err)
	}
}

func TestBadSequences(t *testing.T) {
	cases := []struct {
		name string
		msgs []source.Message
		want error
	}{
		{"commit without begin", []source.Message{commit(0x100, 0x108)}, ErrProtocol},
		{"change outside transaction", []source.Message{rel(1, "v"), ins(1, "1", "a")}, ErrProtocol},
		{"truncate outside transaction", []source.Message{&source.Truncate{RelationIDs: []uint32{1}}}, ErrProtocol},
		{"stream stop without start", []source.Message{&source.StreamStop{}}, ErrProtocol},
		{"begin inside begin", []source.Message{begin(1, 0x100), begin(2, 0x110)}, ErrProtocol},
		{"begin inside stream", []source.Message{&source.StreamStart{Xid: 5, FirstSegment: true}, begin(2, 0x110)}, ErrProtocol},
		{"commit lsn mismatch", []source.Message{begin(1, 0x100), commit(0x101, 0x108)}, ErrProtocol},
		{"unknown relation", []source.Message{begin(1, 0x100), ins(9, "1", "a")}, schema.ErrUnknownRelation},
		{"unknown relation in stream", []source.Message{&source.StreamStart{Xid: 5, FirstSegment: true}, sins(5, 9, "1"), &source.StreamStop{},
			&source.StreamCommit{Xid: 5, CommitLSN: 0x100, EndLSN: 0x108}}, schema.ErrUnknownRelation},
		{"stream commit of unknown xid", []source.Message{&source.StreamCommit{Xid: 5, CommitLSN: 0x100, EndLSN: 0x108}}, ErrProtocol},
		{"stream continuation without first segment", []source.Message{&source.StreamStart{Xid: 5}}, ErrProtocol},
		{"first segment twice", []source.Message{&source.StreamStart{Xid: 5, FirstSegment: true}, &source.StreamStop{},
			&source.StreamStart{Xid: 5, FirstSegment: true}}, ErrProtocol},
		{"prepare without begin prepare", []source.Message{&source.Prepare{Xid: 3}}, ErrProtocol},
		{"commit inside stream", []source.Message{&source.StreamStart{Xid: 5, FirstSegment: true}, commit(0x100, 0x108)}, ErrProtocol},
		{"nil message", []source.Message{nil}, ErrProtocol},
		{"wrong column count", []source.Message{rel(1, "v"), begin(1, 0x100), ins(1, "1")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := applytest.New(0)
			h := newHarness(t, testConfig(t), s)
			var err error
			for _, m := range c.msgs {
				if err = h.a.Handle(context.Background(), 0x1234, m); err != nil {
					break
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), "0/1234") || !strings.HasPrefix(err.Error(), "apply: ") {
				t.Fatalf("error %q does not name the LSN", err)
			}
			if s.OpenTxs() != 0 {
				t.Fatal("target transaction left open")
			}
			if again := h.a.Handle(context.Background(), 0x2000, &source.StreamStop{}); again != err {
				t.Fatalf("after an error Handle returned %v, want the same error", again)
			}
			if h.a.Durable() != 0 {
				t.Fatal("durable moved")
			}
		})
	}
}

func TestSinkErrorStopsApply(t *testing.T) {
	s := applytest.New(0)
	boom := errors.New(`sink/fake: insert into "public"."t1" at 0/110: duplicate key`)
	s.Fail = func(call string) error {
		if call == "insert public.t1 (3,c)" {
			return boom
		}
		return nil
	}
	cfg := testConfig(t)
	h := newHarness(t, cfg, s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0xff, begin(1, 0x100), ins(1, "1", "a"), commit(0x100, 0x108))
	h.feed(0x10f, begin(2, 0x110), ins(1, "2", "b"))
	err := h.a.Handle(context.Background(), 0x10f, ins(1, "3", "c"))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "public.t1") {
		t.Fatalf("got %v", err)
	}
	// The whole group, transaction 1 included, is rolled back; nothing acknowledged.
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "begin", "insert public.t1 (1,a)",
		"insert public.t1 (2,b)", "insert public.t1 (3,c) -> error", "rollback")
	h.durable(0)
	if ferr := h.a.Flush(context.Background()); ferr != err {
		t.Fatal("Flush after failure must return the error")
	}
	if len(s.Committed()) != 0 {
		t.Fatal("something was committed")
	}

	// A retryable error is returned as is, for the caller to restart.
	s2 := applytest.New(0)
	s2.Fail = func(call string) error {
		if strings.HasPrefix(call, "commit") {
			return sink.Retryable(errors.New("connection reset"))
		}
		return nil
	}
	h2 := newHarness(t, cfg, s2)
	h2.feed(0x10, rel(1, "v"))
	h2.txn(1, 0x100, "1")
	if err := h2.a.Flush(context.Background()); !errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("got %v", err)
	}
	h2.durable(0)
}

func TestLargeBufferedTransactionKeptOutOfGroup(t *testing.T) {
	cfg := testConfig(t)
	cfg.GroupMaxRows = 3
	h := newHarness(t, cfg, applytest.New(0))
	h.feed(0x10, rel(1, "v"), rel(2, "w"))
	h.txn(1, 0x100, "1")
	h.feed(0x110, &source.StreamStart{Xid: 9, FirstSegment: true}, sins(9, 1, "2", "a"), sins(9, 1, "3", "b"),
		sins(9, 1, "4", "c"), &source.Truncate{Xid: 9, Options: source.TruncateCascade, RelationIDs: []uint32{1, 2}}, &source.StreamStop{})
	h.feed(0x120, &source.StreamCommit{Xid: 9, CommitLSN: 0x120, EndLSN: 0x128})
	h.feed(0x12f, begin(2, 0x130), &source.Truncate{RelationIDs: []uint32{2}}, commit(0x130, 0x138))
	h.flush()
	h.expect("setup s1", "prepared-gids pgrelay_s1_", "ensure "+t1+" prev=nil", "ensure public.t2(id integer*,w text) prev=nil",
		"begin", "insert public.t1 (1,v1)", "commit 0/108",
		"begin", "insert public.t1 (2,a)", "insert public.t1 (3,b)", "insert public.t1 (4,c)", "truncate public.t1,public.t2 options=1", "commit 0/128",
		"begin", "truncate public.t2 options=0", "commit 0/138")
	h.noProblems()
}

// TestAsyncCommitSettledAtStop: when apply stops with a group commit
// outstanding, in the middle of the next source transaction (Flush) or on a
// failure (a signal cutting a change short), the outstanding commit's outcome
// is learned and, as it committed, counted durable: the position reported at
// the stop is the one the target holds, not the one before.
func TestAsyncCommitSettledAtStop(t *testing.T) {
	for _, stop := range []string{"flush", "failure"} {
		t.Run(stop, func(t *testing.T) {
			s := applytest.New(0)
			s.Async = true
			cfg := testConfig(t)
			cfg.GroupMaxRows = 2
			cfg.GroupMaxDelay = time.Hour
			h := newHarness(t, cfg, s)
			h.feed(0x10, rel(1, "v"))
			h.txn(1, 0x100, "1")
			h.txn(2, 0x110, "2") // group committed, outcome outstanding
			h.feed(0x11f, begin(3, 0x120), ins(1, "3", "v3"))
			h.durable(0)
			if stop == "flush" {
				h.flush()
				h.durable(0x118)
				return
			}
			s.Fail = func(call string) error {
				if strings.HasPrefix(call, "insert public.t1 (4") {
					return context.Canceled
				}
				return nil
			}
			if err := h.a.Handle(context.Background(), 0x11f, ins(1, "4", "v4")); !errors.Is(err, context.Canceled) {
				t.Fatalf("Handle of the change the stop cut short: %v, want context.Canceled", err)
			}
			h.durable(0x118)
		})
	}
}

// TestAsyncCommit: a group commit whose outcome the sink tells later
// (sink.AsyncCommitter) counts as durable only once settled, and a failed one
// fails the applier at the next step without moving the durable position.
func TestAsyncCommit(t *testing.T) {
	s := applytest.New(0)
	s.Async = true
	cfg := testConfig(t)
	cfg.GroupMaxRows = 2
	cfg.GroupMaxDelay = time.Hour
	h := newHarness(t, cfg, s)
	h.feed(0x10, rel(1, "v"))
	h.txn(1, 0x100, "1")
	h.txn(2, 0x110, "2") // group committed, outcome outstanding
	h.durable(0)
	h.txn(3, 0x120, "3")
	h.durable(0)
	s.Fail = func(call string) error {
		if call == "commit 0/138" {
			return errors.New("target went away")
		}
		return nil
	}
	h.txn(4, 0x130, "4") // this group's commit fails, outstanding; the one before settles
	h.durable(0x118)
	err := h.a.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "up to 0/138") || !strings.Contains(err.Error(), "target went away") {
		t.Fatalf("Flush after a failed outstanding commit: %v", err)
	}
	h.durable(0x118)
	if err := h.a.Handle(context.Background(), 0x140, begin(5, 0x140)); err == nil {
		t.Fatal("the applier goes on after a failed commit")
	}
}
