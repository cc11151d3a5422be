package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// fakeRepl is a replication stream: it delivers the frames the test sends,
// checks every acknowledgement against what the sink has stored at that
// instant, and ends (closing Frames) when its context does, or at once with
// fail.
type fakeRepl struct {
	frames chan source.Frame
	sink   *applytest.Sink
	fail   error

	mu       sync.Mutex
	acks     []source.LSN
	problems []string
}

func newFakeRepl(s *applytest.Sink) *fakeRepl {
	return &fakeRepl{frames: make(chan source.Frame, 100), sink: s}
}

func (f *fakeRepl) Frames() <-chan source.Frame { return f.frames }
func (f *fakeRepl) Received() source.LSN        { return 0 }

func (f *fakeRepl) Run(ctx context.Context) error {
	defer close(f.frames)
	if f.fail != nil {
		return f.fail
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeRepl) Ack(lsn source.LSN) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stored := f.sink.Stored().LSN; lsn > stored {
		f.problems = append(f.problems, fmt.Sprintf("ack %s passes the stored position %s", lsn, stored))
	}
	f.acks = append(f.acks, lsn)
}

func (f *fakeRepl) lastAck(t *testing.T) source.LSN {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
	if len(f.acks) == 0 {
		return 0
	}
	return f.acks[len(f.acks)-1]
}

// listDecoder decodes a frame holding the index of one of its messages, and
// tells on decoded each index it decoded.
type listDecoder struct {
	msgs    []source.Message
	decoded chan int
}

func (d listDecoder) Decode(buf []byte) (source.Message, error) {
	i, err := strconv.Atoi(string(buf))
	if err != nil || i < 0 || i >= len(d.msgs) {
		return nil, errors.New("bad frame")
	}
	if d.decoded != nil {
		d.decoded <- i
	}
	return d.msgs[i], nil
}

func (d listDecoder) send(st *fakeRepl) {
	for i := range d.msgs {
		st.frames <- source.Frame{WALStart: 0x100, Data: []byte(strconv.Itoa(i))}
	}
}

// followTest is a relay, a fake target at position 0/100 and an applier on it.
func followTest(t *testing.T, cu *catchUp) (*testRelay, *applytest.Sink, *apply.Applier) {
	t.Helper()
	tgt := applytest.New(0x100)
	tr := newTestRelay(t, Config{}, tgt)
	cfg := apply.Config{Slot: "s", OnLogicalMessage: cu.onMessage, SpillDir: t.TempDir()}
	a, err := apply.New(cfg, tgt, schema.NewCatalog(applytest.NoFacts{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if _, err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return tr, tgt, a
}

func table(id uint32) *source.Relation {
	return &source.Relation{RelationID: id, Namespace: "public", Name: "t" + strconv.Itoa(int(id)), ReplicaIdentity: 'd',
		Columns: []source.RelationColumn{{Flags: 1, Name: "id", TypeOID: 23, TypeMod: -1}}}
}

func row(id string) source.Tuple { return source.Tuple{{Kind: source.ValueText, Data: []byte(id)}} }

// TestFollowCatchesUp: migrate applies everything before its marker, stores
// the marker's position and acknowledges it, and stops.
func TestFollowCatchesUp(t *testing.T) {
	cu := &catchUp{migrate: true, markers: true, token: "tok", target: 0x300}
	tr, tgt, a := followTest(t, cu)
	st := newFakeRepl(tgt)
	dec := listDecoder{msgs: []source.Message{
		table(1),
		&source.Begin{Xid: 1, FinalLSN: 0x200}, &source.Insert{RelationID: 1, New: row("1")}, &source.Commit{CommitLSN: 0x200, EndLSN: 0x208},
		&source.LogicalMessage{LSN: 0x300, Prefix: "pgrelay.caught_up", Content: []byte("another run's")},
		&source.LogicalMessage{LSN: 0x300, Prefix: markerPrefix, Content: []byte("tok")},
		&source.Begin{Xid: 2, FinalLSN: 0x400}, &source.Insert{RelationID: 1, New: row("2")}, &source.Commit{CommitLSN: 0x400, EndLSN: 0x408},
	}}
	dec.send(st)
	if err := tr.follow(t.Context(), st, dec, a, cu, nil); err != nil {
		t.Fatal(err)
	}
	if !cu.reached.Load() {
		t.Fatal("not caught up at the marker")
	}
	if got := tgt.Committed(); fmt.Sprint(got) != "[insert public.t1 (1)]" {
		t.Errorf("committed %q, want the insert before the marker only", got)
	}
	if stored, acked := tgt.Stored().LSN, st.lastAck(t); stored != 0x300 || acked != 0x300 {
		t.Errorf("stored %s, acknowledged %s; want the marker's 0/300 both", stored, acked)
	}
}

// TestFollowStopsCleanly: a signal stops apply; what is committed is
// acknowledged before the stream closes, never more, and the transaction in
// hand is not applied (the next run does).
func TestFollowStopsCleanly(t *testing.T) {
	cu := &catchUp{}
	tr, tgt, a := followTest(t, cu)
	st := newFakeRepl(tgt)
	dec := listDecoder{decoded: make(chan int, 100), msgs: []source.Message{
		table(1),
		&source.Begin{Xid: 1, FinalLSN: 0x200}, &source.Insert{RelationID: 1, New: row("1")}, &source.Commit{CommitLSN: 0x200, EndLSN: 0x208},
		&source.Begin{Xid: 2, FinalLSN: 0x400}, &source.Insert{RelationID: 1, New: row("2")},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tr.follow(ctx, st, dec, a, cu, nil) }()
	// The first transaction alone, until the idle stream commits it.
	for i := range 4 {
		st.frames <- source.Frame{WALStart: 0x100, Data: []byte(strconv.Itoa(i))}
	}
	for tgt.Stored().LSN != 0x208 {
		time.Sleep(time.Millisecond)
	}
	for i := 4; i < len(dec.msgs); i++ {
		st.frames <- source.Frame{WALStart: 0x300, Data: []byte(strconv.Itoa(i))}
	}
	for i := 0; i != len(dec.msgs)-1; i = <-dec.decoded {
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("a signal: %v, want a clean stop", err)
	}
	if got := tgt.Committed(); fmt.Sprint(got) != "[insert public.t1 (1)]" {
		t.Errorf("committed %q, want the whole transaction only", got)
	}
	if stored, acked := tgt.Stored().LSN, st.lastAck(t); stored != 0x208 || acked != 0x208 {
		t.Errorf("stored %s, acknowledged %s; want 0/208 both", stored, acked)
	}
}

// TestFollowStreamEnds: the stream's end is the session's error.
func TestFollowStreamEnds(t *testing.T) {
	cu := &catchUp{}
	tr, tgt, a := followTest(t, cu)
	st := newFakeRepl(tgt)
	st.fail = fmt.Errorf("receive: %w", source.ErrStreamEnded)
	if err := tr.follow(t.Context(), st, listDecoder{}, a, cu, nil); !errors.Is(err, source.ErrStreamEnded) {
		t.Fatalf("got %v, want the stream's end", err)
	}
}

// TestFollowWatchStops: the publication watch's error stops apply and is the
// session's.
func TestFollowWatchStops(t *testing.T) {
	cu := &catchUp{}
	tr, tgt, a := followTest(t, cu)
	st := newFakeRepl(tgt)
	changed := &publicationChangedError{publication: "p", changed: []string{"public.t1"}}
	err := tr.follow(t.Context(), st, listDecoder{}, a, cu, func(context.Context) error { return changed })
	if !errors.Is(err, changed) {
		t.Fatalf("got %v, want the watch's error", err)
	}
}
