package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgproto3"
)

func TestStreamPluginArgs(t *testing.T) {
	tests := []struct {
		major int
		o     StreamOptions
		want  string
		err   string
	}{
		{10, StreamOptions{Publication: "pub"}, `proto_version '1', publication_names '"pub"'`, ""},
		{13, StreamOptions{Publication: "pub", Streaming: "off"}, `proto_version '1', publication_names '"pub"'`, ""},
		{14, StreamOptions{Publication: "pub", Streaming: "on", Binary: true, Messages: true},
			`proto_version '2', publication_names '"pub"', binary 'true', messages 'true', streaming 'on'`, ""},
		{15, StreamOptions{Publication: "pub", Streaming: "on", TwoPhase: true},
			`proto_version '3', publication_names '"pub"', streaming 'on', two_phase 'true'`, ""},
		{16, StreamOptions{Publication: "pub", Streaming: "parallel", TwoPhase: true},
			`proto_version '4', publication_names '"pub"', streaming 'parallel', two_phase 'true'`, ""},
		{18, StreamOptions{Publication: `we"ird 'pub'`, Proto: 1},
			`proto_version '1', publication_names '"we""ird ''pub''"'`, ""},
		{17, StreamOptions{Publication: "p", Streaming: "off"}, `proto_version '4', publication_names '"p"', streaming 'off'`, ""},
		{13, StreamOptions{Publication: "pub", Streaming: "on"}, "", "streaming needs proto_version 2"},
		{15, StreamOptions{Publication: "pub", Streaming: "parallel"}, "", "streaming 'parallel' needs proto_version 4"},
		{14, StreamOptions{Publication: "pub", TwoPhase: true}, "", "two_phase needs proto_version 3"},
		{16, StreamOptions{Publication: "pub", Proto: 2, TwoPhase: true}, "", "two_phase needs proto_version 3"},
		{13, StreamOptions{Publication: "pub", Binary: true}, "", "binary option needs PostgreSQL 14"},
		{13, StreamOptions{Publication: "pub", Messages: true}, "", "messages option needs PostgreSQL 14"},
		{15, StreamOptions{Publication: "pub", Proto: 4}, "", "proto_version 4 is not supported by PostgreSQL 15"},
		{15, StreamOptions{Publication: "pub", Proto: -1}, "", "proto_version -1"},
		{15, StreamOptions{}, "", "no publication"},
		{15, StreamOptions{Publication: "pub", Streaming: "yes"}, "", `streaming "yes"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%+v", tt.major, tt.o), func(t *testing.T) {
			args, err := pluginArgs(tt.major, tt.o)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(args, ", "); got != tt.want {
				t.Fatalf("args\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestStreamEncodeStatusUpdate(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	got := encodeStatusUpdate(0x1_0000_0010, 0x20, 0x30, now, true)
	// Compare with pglogrepl's encoder, which agrees when no field is zero.
	if len(got) != 39 || got[0] != 'd' || binary.BigEndian.Uint32(got[1:]) != 38 || got[5] != 'r' {
		t.Fatalf("bad header % x", got[:6])
	}
	if w := binary.BigEndian.Uint64(got[6:]); w != 0x1_0000_0010 {
		t.Errorf("write = %x", w)
	}
	if f := binary.BigEndian.Uint64(got[14:]); f != 0x20 {
		t.Errorf("flush = %x", f)
	}
	if a := binary.BigEndian.Uint64(got[22:]); a != 0x30 {
		t.Errorf("apply = %x", a)
	}
	micros := int64(binary.BigEndian.Uint64(got[30:]))
	if back := time.UnixMicro(micros + pgEpochMicros).UTC(); !back.Equal(now) {
		t.Errorf("time = %v, want %v", back, now)
	}
	if got[38] != 1 {
		t.Errorf("reply requested = %d", got[38])
	}
	// pglogrepl encodes the same bytes for the same fields.
	cd := &pgproto3.CopyData{Data: got[5:]}
	enc, err := cd.Encode(nil)
	if err != nil || string(enc) != string(got) {
		t.Fatalf("CopyData framing differs: %v", err)
	}
	// A zero flush stays zero (pglogrepl would turn it into the write position).
	zero := encodeStatusUpdate(0x500, 0, 0, now, false)
	if binary.BigEndian.Uint64(zero[14:]) != 0 || binary.BigEndian.Uint64(zero[22:]) != 0 || zero[38] != 0 {
		t.Fatalf("zero flush/apply not kept: % x", zero)
	}
}

func TestStreamAckMonotonic(t *testing.T) {
	s := newStream(nil, "s", 100, StreamOptions{})
	if s.Acked() != 100 {
		t.Fatalf("initial acked = %v, want the start LSN", s.Acked())
	}
	s.Ack(50)
	if s.Acked() != 100 {
		t.Fatalf("Ack(50) moved acked backwards to %v", s.Acked())
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				s.Ack(LSN(1000 + i*8 + g))
			}
		}()
	}
	wg.Wait()
	if want := LSN(1000 + 999*8 + 7); s.Acked() != want {
		t.Fatalf("acked = %v, want %v (the maximum)", s.Acked(), want)
	}
	s.Ack(5)
	if s.Acked() != LSN(1000+999*8+7) {
		t.Fatal("a lower Ack moved the position")
	}
}

func TestStreamFrameSizes(t *testing.T) {
	q := newFrameSizes(4)
	q.push(10)
	q.push(20)
	q.push(30)
	q.release(3)
	if q.n != 3 || q.bytes != 60 {
		t.Fatalf("n=%d bytes=%d", q.n, q.bytes)
	}
	q.release(1) // the consumer took the two oldest
	if q.n != 1 || q.bytes != 30 {
		t.Fatalf("after release n=%d bytes=%d, want 1/30", q.n, q.bytes)
	}
	q.push(40)
	q.push(50)
	q.push(60) // wraps around
	q.release(2)
	if q.n != 2 || q.bytes != 110 {
		t.Fatalf("after wrap n=%d bytes=%d, want 2/110", q.n, q.bytes)
	}
	q.release(0)
	if q.n != 0 || q.bytes != 0 {
		t.Fatalf("empty n=%d bytes=%d", q.n, q.bytes)
	}
}

func startFake(t *testing.T, f *fakeWalsender, start LSN, o StreamOptions) (*ReplConn, *Stream) {
	t.Helper()
	rc := dialFake(t, f)
	if o.Publication == "" {
		o.Publication = "pub"
	}
	s, err := rc.StartReplication(context.Background(), "slot_a", start, o)
	if err != nil {
		t.Fatalf("StartReplication: %v", err)
	}
	<-f.queries // IDENTIFY_SYSTEM
	return rc, s
}

func runStream(t *testing.T, s *Stream) (cancel func(), result <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		done <- s.Run(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return cancel, done
}

func TestStreamKeepaliveRepliesWithAcked(t *testing.T) {
	f := &fakeWalsender{}
	_, s := startFake(t, f, 0x100, StreamOptions{StatusInterval: time.Hour})
	q := <-f.queries
	if want := `START_REPLICATION SLOT slot_a LOGICAL 0/100 (proto_version '4', publication_names '"pub"')`; q != want {
		t.Fatalf("command\n got %s\nwant %s", q, want)
	}
	cancel, done := runStream(t, s)
	// The start position, what the target holds, is confirmed at once.
	if st := f.nextStatus(t, 2*time.Second); st.flush != 0x100 || st.apply != 0x100 {
		t.Fatalf("first status update = %+v, want flush = apply = 0/100 (the start) before any interval passed", st)
	}

	f.xlog(0x200, []byte("Bdata"))
	fr := <-s.Frames()
	if fr.WALStart != 0x200 || string(fr.Data) != "Bdata" {
		t.Fatalf("frame %+v", fr)
	}
	f.keepalive(0x300, true)
	st := f.nextStatus(t, 2*time.Second)
	if st.write != 0x300 || st.flush != 0x100 || st.apply != 0x100 {
		t.Fatalf("reply to keepalive = %+v, want write 0/300, flush = apply = 0/100 (the acked start, not the received)", st)
	}
	if s.Received() != 0x300 {
		t.Fatalf("Received = %v", s.Received())
	}
	s.Ack(0x250)
	s.Ack(0x180) // backwards: ignored
	// Nothing else arrives: the new position is reported without waiting
	// for the (hour-long) interval.
	st = f.nextStatus(t, 5*time.Second)
	if st.write != 0x300 || st.flush != 0x250 || st.apply != 0x250 {
		t.Fatalf("status after Ack on a quiet stream = %+v, want write 0/300, flush = apply = 0/250", st)
	}
	f.keepalive(0x300, false)
	f.keepalive(0x310, true)
	st = f.nextStatus(t, 2*time.Second)
	if st.write != 0x310 || st.flush != 0x250 || st.apply != 0x250 {
		t.Fatalf("status after Ack = %+v, want write 0/310, flush = apply = 0/250", st)
	}
	if d := time.Since(st.clientTime); d < 0 || d > time.Minute {
		t.Fatalf("client time %v is off", st.clientTime)
	}
	s.Ack(0x320)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	st = f.nextStatus(t, 2*time.Second)
	if st.flush != 0x320 || st.write != 0x320 {
		t.Fatalf("final status = %+v, want flush 0/320 and write not below it", st)
	}
	if _, open := <-s.Frames(); open {
		t.Fatal("Frames not closed after Run returned")
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("second Run did not fail")
	}
}

func TestStreamQuietAckReportedAtOnce(t *testing.T) {
	f := &fakeWalsender{}
	_, s := startFake(t, f, 0x100, StreamOptions{StatusInterval: time.Hour})
	<-f.queries
	cancel, done := runStream(t, s)
	f.nextStatus(t, 2*time.Second) // the start position
	// A backlog arrives and is applied; the last Ack comes while the
	// stream is quiet, with no keepalive asking for a reply.
	for i := range 50 {
		f.xlog(LSN(0x200+i*0x10), []byte("Ix"))
		<-s.Frames()
		s.Ack(LSN(0x200 + i*0x10))
	}
	const last = LSN(0x200 + 49*0x10)
	for {
		st := f.nextStatus(t, 5*time.Second)
		if st.flush > last {
			t.Fatalf("status flush %v beyond the acked %v", st.flush, last)
		}
		if st.flush == last {
			break
		}
	}
	cleanStop(t, f, cancel, done, last)
}

func TestStreamPeriodicStatusWhileConsumerIsBlocked(t *testing.T) {
	f := &fakeWalsender{}
	_, s := startFake(t, f, 0, StreamOptions{StatusInterval: 20 * time.Millisecond, BufferFrames: 2})
	<-f.queries
	_, _ = runStream(t, s)

	const total = 10
	sent := make(chan int, total)
	go func() {
		for i := range total {
			f.xlog(LSN(0x1000+i*0x10), []byte{'I', byte(i)})
			sent <- i
		}
		close(sent)
	}()
	// The consumer reads nothing: two frames fill the buffer, one waits in Run,
	// and the server's writes block.
	deadline := time.Now().Add(2 * time.Second)
	for len(s.Frames()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if len(s.Frames()) != 2 {
		t.Fatalf("buffer holds %d frames, want 2", len(s.Frames()))
	}
	f.drainStatuses()
	// Status updates keep coming though the socket is not read.
	s.Ack(0x1005)
	var st statusUpdate
	for range 3 {
		st = f.nextStatus(t, time.Second)
	}
	if st.flush != 0x1005 {
		t.Fatalf("status while blocked: flush = %v, want the acked 0/1005", st.flush)
	}
	if st.write < 0x1010 || st.write > LSN(0x1000+(total-1)*0x10) {
		t.Fatalf("status while blocked: write = %v, want a received position", st.write)
	}
	if n := len(sent); n >= total {
		t.Fatalf("server sent all %d frames though the consumer read none", n)
	}
	// The consumer catches up: every frame arrives, in order.
	for i := range total {
		select {
		case fr := <-s.Frames():
			if fr.WALStart != LSN(0x1000+i*0x10) || fr.Data[1] != byte(i) {
				t.Fatalf("frame %d = %+v", i, fr)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("frame %d did not arrive", i)
		}
	}
}

func TestStreamByteBound(t *testing.T) {
	f := &fakeWalsender{}
	_, s := startFake(t, f, 0, StreamOptions{StatusInterval: time.Hour, BufferBytes: 100})
	// Run reads the clock in the loop that holds a frame back, and after it
	// delivered one: a reading once a frame was received says Run has handled
	// it, delivered or held.
	var seenAt atomic.Uint64 // the received position at the latest reading
	s.now = func() time.Time {
		seenAt.Store(uint64(s.Received()))
		return time.Now()
	}
	<-f.queries
	_, _ = runStream(t, s)

	go func() {
		for i := range 4 {
			f.xlog(LSN(0x10+i), make([]byte, 60))
		}
	}()
	// held waits until Run has handled the frame at lsn, and checks that it
	// held it back: the buffer holds one frame, and the next would pass 100
	// bytes. lsn 0 waits for the one frame only.
	held := func(lsn LSN) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for len(s.Frames()) != 1 || LSN(seenAt.Load()) < lsn {
			if time.Now().After(deadline) {
				t.Fatalf("buffer holds %d frames, want 1 (and the frame at %v held back); Run last looked at the clock at %v", len(s.Frames()), lsn, LSN(seenAt.Load()))
			}
			time.Sleep(time.Millisecond)
		}
		if got := len(s.Frames()); got != 1 {
			t.Fatalf("buffer holds %d frames, want 1", got)
		}
	}
	held(0x11)
	for i := range 4 {
		fr := <-s.Frames()
		if fr.WALStart != LSN(0x10+i) {
			t.Fatalf("frame %d at %v", i, fr.WALStart)
		}
		switch {
		case i < 2:
			held(LSN(0x10 + i + 2))
		case i == 2:
			held(0) // the last frame, nothing behind it
		}
	}
	// One frame larger than the whole bound still passes, alone.
	go f.xlog(0x99, make([]byte, 500))
	select {
	case fr := <-s.Frames():
		if len(fr.Data) != 500 {
			t.Fatalf("big frame has %d bytes", len(fr.Data))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a frame larger than BufferBytes was never delivered")
	}
}

func TestStreamSlotInUseThenRetry(t *testing.T) {
	f := &fakeWalsender{startReplies: []*pgproto3.ErrorResponse{{
		Severity: "ERROR", Code: "55006", Message: `replication slot "slot_a" is active for PID 4242`,
	}}}
	rc := dialFake(t, f)
	<-f.queries
	_, err := rc.StartReplication(context.Background(), "slot_a", 0, StreamOptions{Publication: "pub"})
	if !errors.Is(err, ErrSlotInUse) {
		t.Fatalf("err = %v, want ErrSlotInUse", err)
	}
	if !strings.Contains(err.Error(), "PID 4242") {
		t.Fatalf("err %q does not name the PID", err)
	}
	<-f.queries
	// The same connection can try again (the ReadyForQuery was consumed).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := rc.StartReplication(ctx, "slot_a", 0, StreamOptions{Publication: "pub"})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	<-f.queries
	if _, err := rc.StartReplication(ctx, "slot_a", 0, StreamOptions{Publication: "pub"}); err == nil {
		t.Fatal("a second StartReplication on a streaming connection did not fail")
	}
	if _, err := rc.CreateSlot(ctx, "other", SlotOptions{}); err == nil {
		t.Fatal("CreateSlot on a streaming connection did not fail")
	}
	_ = s
}

func TestStreamStartErrorsClassified(t *testing.T) {
	tests := []struct {
		reply *pgproto3.ErrorResponse
		want  error
	}{
		{&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42704", Message: `replication slot "slot_a" does not exist`}, ErrSlotNotFound},
		{&pgproto3.ErrorResponse{Severity: "ERROR", Code: "55000", Message: `can no longer get changes from replication slot "slot_a"`,
			Detail: "This slot has been invalidated because it exceeded the maximum reserved size."}, ErrSlotInvalidated},
	}
	for _, tt := range tests {
		t.Run(tt.want.Error(), func(t *testing.T) {
			f := &fakeWalsender{startReplies: []*pgproto3.ErrorResponse{tt.reply}}
			rc := dialFake(t, f)
			_, err := rc.StartReplication(context.Background(), "slot_a", 0, StreamOptions{Publication: "pub"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == ErrSlotInvalidated && !strings.Contains(err.Error(), "pg_drop_replication_slot('slot_a')") {
				t.Fatalf("err %q lacks the fix", err)
			}
		})
	}
}

func TestStreamEndsOnServerErrorAndCopyDone(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		f := &fakeWalsender{}
		_, s := startFake(t, f, 0, StreamOptions{StatusInterval: time.Hour})
		<-f.queries
		_, done := runStream(t, s)
		f.send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42704", Message: `publication "pub" does not exist`})
		select {
		case err := <-done:
			if !errors.Is(err, ErrPublicationMissing) {
				t.Fatalf("Run = %v, want ErrPublicationMissing", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return on a server error")
		}
	})
	// The publication missing at a change (dropped under the slot): 17 and
	// older end the stream with an error, 18 skips the change with a
	// warning. Either way the slot cannot send it: the stream ends saying
	// that only a new copy gets past it.
	for name, msg := range map[string]pgproto3.BackendMessage{
		"publication error": &pgproto3.ErrorResponse{Severity: "ERROR", Code: "42704", Message: `publication "pub" does not exist`,
			Where: "slot \"slot_a\", output plugin \"pgoutput\", in the change callback"},
		"publication warning": &pgproto3.NoticeResponse{Severity: "WARNING", Code: "42704", Message: `skipped loading publication "pub"`,
			Detail: "The publication does not exist at this point in the WAL.", Hint: "Create the publication if it does not exist."},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeWalsender{}
			_, s := startFake(t, f, 0, StreamOptions{Publication: "pub", StatusInterval: time.Hour})
			<-f.queries
			_, done := runStream(t, s)
			f.send(&pgproto3.NoticeResponse{Severity: "NOTICE", Message: "something else"})
			f.send(msg)
			select {
			case err := <-done:
				if !errors.Is(err, ErrPublicationDropped) || !errors.Is(err, ErrPublicationMissing) ||
					!strings.Contains(err.Error(), `publication "pub" is missing for slot "slot_a"`) || !strings.Contains(err.Error(), "PGRELAY_SNAPSHOT=always") {
					t.Fatalf("Run = %v, want ErrPublicationDropped naming the publication, the slot and PGRELAY_SNAPSHOT=always", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("Run did not return on %T", msg)
			}
		})
	}
	for name, end := range map[string]pgproto3.BackendMessage{
		"copydone":        &pgproto3.CopyDone{},
		"commandcomplete": &pgproto3.CommandComplete{CommandTag: []byte("COPY 0")}, // a walsender's shutdown
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeWalsender{}
			_, s := startFake(t, f, 0, StreamOptions{StatusInterval: time.Hour})
			<-f.queries
			_, done := runStream(t, s)
			f.send(end)
			select {
			case err := <-done:
				if !errors.Is(err, ErrStreamEnded) {
					t.Fatalf("Run = %v, want ErrStreamEnded", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("Run did not return on %T", end)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		f := &fakeWalsender{}
		_, s := startFake(t, f, 0, StreamOptions{StatusInterval: time.Hour})
		<-f.queries
		_, done := runStream(t, s)
		f.send(&pgproto3.CopyData{Data: []byte{pglogrepl.XLogDataByteID, 1, 2}})
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "XLogData") {
				t.Fatalf("Run = %v, want an XLogData error", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return on a malformed message")
		}
	})
}

func TestStreamIdleTicksSendStatus(t *testing.T) {
	f := &fakeWalsender{}
	_, s := startFake(t, f, 0x42, StreamOptions{StatusInterval: 15 * time.Millisecond})
	<-f.queries
	_, _ = runStream(t, s)
	for range 3 {
		st := f.nextStatus(t, time.Second)
		if st.flush != 0x42 || st.write != 0x42 {
			t.Fatalf("idle status = %+v, want write = flush = 0/42", st)
		}
	}
}

// cleanStop cancels Run and checks a clean stop: Run returns ctx's error, the
// final status update confirms acked, and the client's last messages are that
// update, then CopyDone.
func cleanStop(t *testing.T, f *fakeWalsender, cancel func(), done <-chan error, acked LSN) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	if st := f.nextStatus(t, time.Second); st.flush != acked {
		t.Fatalf("final status = %+v, want flush %v", st, acked)
	}
	if ev := f.lastEvents(2); len(ev) != 2 || ev[0] != "status" || ev[1] != "copydone" {
		t.Fatalf("the client's last messages = %v, want [status copydone]", ev)
	}
}

// lastEvents returns the last n of the events the fake has seen so far.
func (f *fakeWalsender) lastEvents(n int) []string {
	var all []string
	for {
		select {
		case e := <-f.events:
			all = append(all, e)
		default:
			return all[max(0, len(all)-n):]
		}
	}
}

func TestStreamCleanStopWaitsForServerCopyDone(t *testing.T) {
	// The server sends two more messages before its CopyDone: they are read
	// and dropped, not handed to the consumer.
	f := &fakeWalsender{tail: [][]byte{[]byte("Ilate1"), []byte("Ilate2")}}
	_, s := startFake(t, f, 0x100, StreamOptions{StatusInterval: time.Hour})
	<-f.queries
	s.finishWait = time.Hour // only the server's CopyDone ends the wait
	cancel, done := runStream(t, s)
	f.nextStatus(t, 2*time.Second)
	f.xlog(0x200, []byte("Bfirst"))
	if fr := <-s.Frames(); string(fr.Data) != "Bfirst" {
		t.Fatalf("frame %q", fr.Data)
	}
	s.Ack(0x300)
	cleanStop(t, f, cancel, done, 0x300)
	for fr := range s.Frames() {
		t.Errorf("frame %q reached the consumer after the stop", fr.Data)
	}
}

func TestStreamCleanStopGivesUpWithoutServerCopyDone(t *testing.T) {
	f := &fakeWalsender{ignoreCopyDone: true}
	_, s := startFake(t, f, 0x100, StreamOptions{StatusInterval: time.Hour})
	<-f.queries
	s.finishWait = 50 * time.Millisecond
	cancel, done := runStream(t, s)
	f.nextStatus(t, 2*time.Second)
	s.Ack(0x180)
	cleanStop(t, f, cancel, done, 0x180)
}
