package apply

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// fakeStream is a FrameSource and ReceivedReporter that checks every Ack
// against what the sink has stored at that instant.
type fakeStream struct {
	frames   chan source.Frame
	sink     *applytest.Sink
	received atomic.Uint64
	// idleLooks counts Received calls with no frame waiting: Run's idle
	// ticks once it has taken every frame handed to it.
	idleLooks atomic.Int64

	mu       sync.Mutex
	acks     []source.LSN
	problems []string
}

func newFakeStream(s *applytest.Sink) *fakeStream {
	return &fakeStream{frames: make(chan source.Frame, 100), sink: s}
}

func (f *fakeStream) Frames() <-chan source.Frame { return f.frames }

func (f *fakeStream) Received() source.LSN {
	if len(f.frames) == 0 {
		f.idleLooks.Add(1)
	}
	return source.LSN(f.received.Load())
}

func (f *fakeStream) Ack(lsn source.LSN) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stored := f.sink.Stored().LSN; lsn > stored {
		f.problems = append(f.problems, fmt.Sprintf("ack %s passes the stored position %s", lsn, stored))
	}
	if n := len(f.acks); n > 0 && lsn <= f.acks[n-1] {
		f.problems = append(f.problems, fmt.Sprintf("ack %s does not move forward from %s", lsn, f.acks[n-1]))
	}
	f.acks = append(f.acks, lsn)
}

func (f *fakeStream) lastAck() source.LSN {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acks) == 0 {
		return 0
	}
	return f.acks[len(f.acks)-1]
}

func (f *fakeStream) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// indexDecoder decodes a frame whose data is the decimal index of a message.
type indexDecoder []source.Message

func (d indexDecoder) Decode(buf []byte) (source.Message, error) {
	i, err := strconv.Atoi(string(buf))
	if err != nil || i < 0 || i >= len(d) {
		return nil, errors.New("bad frame")
	}
	return d[i], nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRunAcksOnlyWhatIsDurable(t *testing.T) {
	s := applytest.New(0)
	cfg := testConfig(t)
	cfg.GroupMaxDelay = 20 * time.Millisecond
	cfg.IdleProgressInterval = time.Nanosecond
	a, err := New(cfg, s, schema.NewCatalog(applytest.NoFacts{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var dec indexDecoder
	var frames []source.Frame
	stream := newFakeStream(s)
	send := func(lsn source.LSN, msgs ...source.Message) {
		for _, m := range msgs {
			frames = append(frames, source.Frame{WALStart: lsn, Data: []byte(strconv.Itoa(len(dec)))})
			dec = append(dec, m)
		}
	}
	// Messages are prepared before Run starts reading them (dec is read by Run).
	send(0x10, rel(1, "v"))
	send(0xff, begin(1, 0x100), ins(1, "1", "a"), commit(0x100, 0x108))
	send(0x10f, begin(2, 0x110), ins(1, "2", "b"), commit(0x110, 0x118))
	send(0x11f, begin(3, 0x120), ins(1, "3", "c")) // half received
	send(0x128, commit(0x120, 0x128))
	stream.received.Store(0x5000)
	// Hold back the last frame so the stream goes idle inside transaction 3.
	for _, f := range frames[:len(frames)-1] {
		stream.frames <- f
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, stream, dec, a) }()

	// Idle inside transaction 3: transactions 1 and 2 share a target commit
	// that cannot happen before 3 ends, so nothing is acknowledged. Run
	// acknowledges after each tick, before the next one looks.
	waitFor(t, "two idle ticks", func() bool { return stream.idleLooks.Load() >= 2 })
	if got := stream.lastAck(); got != 0 {
		t.Fatalf("acked %s with a source transaction half applied to the group", got)
	}
	stream.frames <- frames[len(frames)-1]
	waitFor(t, "ack of the group", func() bool { return stream.lastAck() >= 0x128 })
	// Idle with nothing in hand: the source's position is stored, then acked.
	waitFor(t, "ack of the idle position", func() bool { return stream.lastAck() == 0x5000 })
	if p := s.Stored().LSN; p != 0x5000 {
		t.Fatalf("stored %s", p)
	}
	close(stream.frames)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stream.check(t)
	if got := len(s.Committed()); got != 3 {
		t.Fatalf("%d rows committed", got)
	}
}

func TestRunStopsOnMarker(t *testing.T) {
	s := applytest.New(0)
	cfg := testConfig(t)
	cfg.OnLogicalMessage = func(_ context.Context, m *source.LogicalMessage, _ source.LSN) error {
		if m.Prefix == "pgrelay.caught_up" {
			return ErrStop
		}
		return nil
	}
	a, err := New(cfg, s, schema.NewCatalog(applytest.NoFacts{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stream := newFakeStream(s)
	dec := indexDecoder{rel(1, "v"), begin(1, 0x100), ins(1, "1", "a"), commit(0x100, 0x108),
		&source.LogicalMessage{LSN: 0x110, Prefix: "pgrelay.caught_up"}}
	for i := range dec {
		stream.frames <- source.Frame{WALStart: 0x100, Data: []byte(strconv.Itoa(i))}
	}
	err = Run(context.Background(), stream, dec, a)
	if !errors.Is(err, ErrStop) {
		t.Fatalf("got %v", err)
	}
	if got := stream.lastAck(); got != 0x108 {
		t.Fatalf("acked %s, want 0/108", got)
	}
	stream.check(t)
}

// pgoutput byte builders (protocol 1), to run the real decoder.
type pgout []byte

func (b pgout) u8(v byte) pgout        { return append(b, v) }
func (b pgout) u16(v uint16) pgout     { return binary.BigEndian.AppendUint16(b, v) }
func (b pgout) u32(v uint32) pgout     { return binary.BigEndian.AppendUint32(b, v) }
func (b pgout) u64(v uint64) pgout     { return binary.BigEndian.AppendUint64(b, v) }
func (b pgout) str(s string) pgout     { return append(append(b, s...), 0) }
func (b pgout) lsn(l source.LSN) pgout { return b.u64(uint64(l)) }

func TestRunWithDecoder(t *testing.T) {
	s := applytest.New(0)
	cfg := testConfig(t)
	a, err := New(cfg, s, schema.NewCatalog(applytest.NoFacts{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stream := newFakeStream(s)
	relation := pgout{'R'}.u32(1).str("public").str("t1").u8('d').u16(2).
		u8(1).str("id").u32(oidInt4).u32(0xffffffff).
		u8(0).str("v").u32(oidText).u32(0xffffffff)
	row := func(id, v string) pgout {
		b := pgout{'I'}.u32(1).u8('N').u16(2).u8('t').u32(uint32(len(id)))
		b = append(b, id...)
		b = b.u8('t').u32(uint32(len(v)))
		return append(b, v...)
	}
	frames := []pgout{
		pgout{'B'}.lsn(0x100).u64(0).u32(1), relation, row("1", "a"), row("2", "b"),
		pgout{'C'}.u8(0).lsn(0x100).lsn(0x108).u64(0),
	}
	for _, f := range frames {
		stream.frames <- source.Frame{WALStart: 0x100, Data: f}
	}
	close(stream.frames)
	if err := Run(context.Background(), stream, source.NewDecoder(1), a); err != nil {
		t.Fatal(err)
	}
	if got := s.Committed(); len(got) != 2 || got[0] != "insert public.t1 (1,a)" || got[1] != "insert public.t1 (2,b)" {
		t.Fatalf("committed %q", got)
	}
	if stream.lastAck() != 0x108 {
		t.Fatalf("acked %s", stream.lastAck())
	}
	stream.check(t)

	// A malformed frame stops Run with the decoder's error and the LSN.
	s2 := applytest.New(0)
	a2, _ := New(cfg, s2, schema.NewCatalog(applytest.NoFacts{}), nil)
	defer a2.Close(context.Background())
	if _, err := a2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad := newFakeStream(s2)
	bad.frames <- source.Frame{WALStart: 0x200, Data: pgout{'B'}.lsn(0x100)}
	err = Run(context.Background(), bad, source.NewDecoder(1), a2)
	if err == nil || !strings.Contains(err.Error(), "0/200") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v", err)
	}
}

// StorePosition stores a position at once when nothing is in hand, and nothing
// while a transaction is half received.
func TestStorePosition(t *testing.T) {
	s := applytest.New(0x100)
	h := newHarness(t, testConfig(t), s)
	h.feed(0x10, rel(1, "v"))
	h.feed(0x1ff, begin(1, 0x210), ins(1, "1", "a"))
	if err := h.a.StorePosition(context.Background(), 0x200); err != nil {
		t.Fatal(err)
	}
	h.durable(0x100)
	h.feed(0x210, commit(0x210, 0x218))
	h.flush()
	h.durable(0x218)
	if err := h.a.StorePosition(context.Background(), 0x300); err != nil {
		t.Fatal(err)
	}
	h.durable(0x300)
	h.noProblems()
}
