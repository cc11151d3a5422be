package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// Default bounds of the buffer between the receive loop and its consumer.
const (
	DefaultBufferFrames = 1024
	DefaultBufferBytes  = 16 << 20
)

// statusWriteTimeout bounds a standby status update write: a server that does not
// read 39 bytes for that long is gone.
const statusWriteTimeout = 30 * time.Second

// bytePollInterval is how often a receive loop held back by the byte bound of the
// buffer looks whether the consumer has taken frames out (a channel cannot say).
const bytePollInterval = 2 * time.Millisecond

// ackQuiet is how long the stream must have carried no message before an
// Ack that moved the durable position is reported at once, instead of with
// the next periodic status update: when apply catches up the source learns
// within a fraction of a second (and frees WAL, and monitors stop showing lag
// that is not there), while a busy stream is not slowed by extra updates.
const ackQuiet = 100 * time.Millisecond

// StreamOptions are the pgoutput options of START_REPLICATION and the loop settings.
type StreamOptions struct {
	Publication string // required
	Proto       int    // proto_version; 0 means the highest the server supports
	// Streaming is the streaming option: "" (not sent: the server default, off),
	// "on" (proto 2+), "parallel" (proto 4+) or "off".
	Streaming string
	TwoPhase  bool // two_phase (proto 3+)
	Messages  bool // messages (PostgreSQL 14+)
	Binary    bool // binary (PostgreSQL 14+)
	// StatusInterval is the period of standby status updates; 0 means 10s. It must
	// stay well below the server's wal_sender_timeout (default 60s).
	StatusInterval time.Duration
	// BufferFrames and BufferBytes bound the Frames channel (0: the defaults).
	// A single frame larger than BufferBytes is still delivered, alone.
	BufferFrames int
	BufferBytes  int
}

// Frame is one XLogData message of the stream: one pgoutput message.
type Frame struct {
	WALStart     LSN // the LSN of the WAL record the message was decoded from
	ServerWALEnd LSN
	ServerTime   time.Time
	Data         []byte // the pgoutput message; owned by the receiver
}

// Stream is a running logical replication stream. Run receives it; Frames hands
// the messages to one consumer in order; Ack tells the server what the consumer
// has made durable.
//
// Three positions are kept apart: Received (the highest WAL position the server
// told us about), the acked position (what the caller declared durable via Ack,
// initially the start LSN) and what was last reported to the server. Standby status
// updates carry write = Received and flush = apply = acked, so the server's
// confirmed_flush_lsn never passes what is durable on the target (invariant 2).
type Stream struct {
	conn     *pgconn.PgConn
	slot     string
	frames   chan Frame
	interval time.Duration
	maxBytes int
	// publication is the one the stream sends changes through.
	publication string

	acked    atomic.Uint64
	received atomic.Uint64
	started  atomic.Bool

	// mu guards what Ack shares with the receive loop to wake it early.
	mu       sync.Mutex
	looping  bool      // the receive loop runs: armAckCheck may move its read deadline
	deadline time.Time // the read deadline in force
	checkAt  time.Time // when the loop looks whether to report an Ack; zero: not armed

	// Owned by Run.
	inChan        frameSizes // sizes of the frames sent into the channel and not yet taken
	busy          bool       // a message arrived since the Ack check was armed
	reportedWrite LSN
	reportedFlush LSN
	now           func() time.Time
	finishWait    time.Duration // finishTimeout; tests shorten it
}

// StartReplication starts streaming slot from start through the publication. A
// start of 0 lets the server start at the slot's confirmed_flush_lsn; the server
// also never starts before it. The start LSN counts as acked: it must be durable
// on the target (it is the position the target holds, or 0).
//
// Errors wrap ErrSlotInUse (another process streams from the slot: wait and
// retry, on this connection or a new one), ErrSlotNotFound, ErrSlotInvalidated or
// ErrUnsupported. After success the connection belongs to the Stream; call Run.
func (c *ReplConn) StartReplication(ctx context.Context, slot string, start LSN, o StreamOptions) (*Stream, error) {
	if c.streaming {
		return nil, errors.New("source: start replication: the connection is already streaming")
	}
	if err := ValidateSlotName(slot); err != nil {
		return nil, fmt.Errorf("source: start replication: %w", err)
	}
	args, err := pluginArgs(c.major, o)
	if err != nil {
		return nil, fmt.Errorf("source: start replication on slot %q: %w", slot, err)
	}
	sql := fmt.Sprintf("START_REPLICATION SLOT %s LOGICAL %s (%s)", slot, start, strings.Join(args, ", "))
	if err := startCopyBoth(ctx, c.conn, sql); err != nil {
		return nil, fmt.Errorf("source: start replication on slot %q: %w", slot, classifyPgError(err, slot))
	}
	c.streaming = true
	s := newStream(c.conn, slot, start, o)
	return s, nil
}

func newStream(conn *pgconn.PgConn, slot string, start LSN, o StreamOptions) *Stream {
	interval := o.StatusInterval
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	frames := o.BufferFrames
	if frames <= 0 {
		frames = DefaultBufferFrames
	}
	maxBytes := o.BufferBytes
	if maxBytes <= 0 {
		maxBytes = DefaultBufferBytes
	}
	s := &Stream{
		conn:       conn,
		slot:       slot,
		frames:     make(chan Frame, frames),
		interval:   interval,
		maxBytes:   maxBytes,
		inChan:     newFrameSizes(frames + 1),
		now:        time.Now,
		finishWait: finishTimeout,
	}
	s.publication = o.Publication
	s.acked.Store(uint64(start))
	s.received.Store(uint64(start))
	s.reportedFlush = start
	s.reportedWrite = start
	return s
}

// pluginArgs builds the pgoutput options of START_REPLICATION, refusing what the
// server cannot do rather than letting it fail later in the stream.
func pluginArgs(major int, o StreamOptions) ([]string, error) {
	maxProto := ProtoVersionFor(major)
	proto := o.Proto
	if proto == 0 {
		proto = maxProto
	}
	if proto < 1 || proto > maxProto {
		return nil, fmt.Errorf("proto_version %d is not supported by PostgreSQL %d (1 to %d): %w", proto, major, maxProto, ErrUnsupported)
	}
	if o.Publication == "" {
		return nil, errors.New("no publication given")
	}
	args := []string{
		fmt.Sprintf("proto_version '%d'", proto),
		// publication_names is a list of identifiers inside a string literal.
		"publication_names " + pgquote.CommandLiteral(pgquote.Ident(o.Publication)),
	}
	if o.Binary {
		if major < 14 {
			return nil, fmt.Errorf("the binary option needs PostgreSQL 14 or newer (server is %d): %w", major, ErrUnsupported)
		}
		args = append(args, "binary 'true'")
	}
	if o.Messages {
		if major < 14 {
			return nil, fmt.Errorf("the messages option needs PostgreSQL 14 or newer (server is %d): %w", major, ErrUnsupported)
		}
		args = append(args, "messages 'true'")
	}
	switch o.Streaming {
	case "":
	case "off":
		if proto >= 2 {
			args = append(args, "streaming 'off'")
		}
	case "on":
		if proto < 2 {
			return nil, fmt.Errorf("streaming needs proto_version 2 (PostgreSQL 14) or newer, have %d: %w", proto, ErrUnsupported)
		}
		args = append(args, "streaming 'on'")
	case "parallel":
		if proto < 4 {
			return nil, fmt.Errorf("streaming 'parallel' needs proto_version 4 (PostgreSQL 16) or newer, have %d: %w", proto, ErrUnsupported)
		}
		args = append(args, "streaming 'parallel'")
	default:
		return nil, fmt.Errorf("streaming %q is not one of on, off, parallel", o.Streaming)
	}
	if o.TwoPhase {
		if proto < 3 {
			return nil, fmt.Errorf("two_phase needs proto_version 3 (PostgreSQL 15) or newer, have %d: %w", proto, ErrUnsupported)
		}
		args = append(args, "two_phase 'true'")
	}
	return args, nil
}

// startCopyBoth sends a START_REPLICATION and waits for CopyBothResponse. On an
// ErrorResponse it reads on to ReadyForQuery, so the connection stays usable for
// another try (pglogrepl.StartReplication returns before it, leaving the
// ReadyForQuery to confuse the next command).
func startCopyBoth(ctx context.Context, conn *pgconn.PgConn, sql string) error {
	conn.Frontend().SendQuery(&pgproto3.Query{String: sql})
	if err := conn.Frontend().Flush(); err != nil {
		return fmt.Errorf("send START_REPLICATION: %w", err)
	}
	var pgErr error
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			if pgErr != nil {
				return pgErr
			}
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyBothResponse:
			return nil
		case *pgproto3.ErrorResponse:
			pgErr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery:
			if pgErr != nil {
				return pgErr
			}
			return errors.New("server ended START_REPLICATION without streaming")
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus, *pgproto3.CommandComplete,
			*pgproto3.RowDescription, *pgproto3.DataRow:
		default:
			return fmt.Errorf("unexpected %T in reply to START_REPLICATION", msg)
		}
	}
}

// Frames is the stream of pgoutput messages, in WAL order. It is bounded in
// frames and bytes: when the consumer falls behind, Run stops reading the socket
// (the server then waits) but keeps sending status updates. It is closed when Run
// returns.
func (s *Stream) Frames() <-chan Frame { return s.frames }

// Ack declares everything up to lsn durable on the target. It never moves the
// acked position backwards (a smaller lsn is ignored), is safe from any
// goroutine, and is reported to the server with the next status update:
// periodic, in reply to a keepalive, the final one when Run's context ends, or
// one sent once the stream has carried no message for ackQuiet.
func (s *Stream) Ack(lsn LSN) {
	for {
		cur := s.acked.Load()
		if uint64(lsn) <= cur {
			return
		}
		if s.acked.CompareAndSwap(cur, uint64(lsn)) {
			s.armAckCheck()
			return
		}
	}
}

// armAckCheck brings the receive loop's read deadline forward to ackQuiet
// from now, so that it reports the new acked position then if nothing arrived
// meanwhile. (A loop not reading at the moment meets the earlier deadline
// with its next read.)
func (s *Stream) armAckCheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.looping || !s.checkAt.IsZero() {
		return
	}
	s.checkAt = s.now().Add(ackQuiet)
	if s.checkAt.Before(s.deadline) {
		s.deadline = s.checkAt
		_ = s.conn.Conn().SetReadDeadline(time.Now().Add(ackQuiet))
	}
}

// Acked is the acked position: the start LSN or the highest Ack.
func (s *Stream) Acked() LSN { return LSN(s.acked.Load()) }

// Received is the highest WAL position the server has reported: the start of the
// latest message or the WAL end of the latest keepalive.
func (s *Stream) Received() LSN { return LSN(s.received.Load()) }

func (s *Stream) noteReceived(lsn LSN) {
	for {
		cur := s.received.Load()
		if uint64(lsn) <= cur || s.received.CompareAndSwap(cur, uint64(lsn)) {
			return
		}
	}
}

// Run is the receive loop. It reads the stream, hands each message to Frames,
// answers keepalives that ask for a reply at once with the acked position, and
// sends a status update every StatusInterval. It returns when ctx is done (after
// a final status update with the acked position, which finish makes sure the
// server has read; the result is ctx's error) or on
// the first error, and closes Frames on return. It may be called once; afterwards
// close the ReplConn.
func (s *Stream) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("source: replication stream: Run called twice")
	}
	defer close(s.frames)
	err := s.loop(ctx)
	if ctx.Err() == nil {
		return err
	}
	if serr := s.sendStatus(); serr != nil {
		return fmt.Errorf("source: replication stream: final status update: %w (after %w)", serr, ctx.Err())
	}
	s.finish()
	return ctx.Err()
}

// finishTimeout bounds how long a clean stop waits for the server to answer
// its CopyDone.
const finishTimeout = 5 * time.Second

// finish ends the copy after the final status update: it sends CopyDone and
// reads, dropping whatever still arrives, until the server's CopyDone. The
// server reads its socket in order, so its CopyDone means the final status
// update was read too and confirmed_flush_lsn holds the acked position.
// Closing at once could lose that update: a walsender busy decoding does not
// read its socket, and when its next write then finds the socket closed it
// exits without reading what waits there, leaving the slot behind what the
// target holds (harmless, the next start confirms it, but status shows lag
// and the source keeps WAL). After finishTimeout (a walsender decoding one
// huge record) or an error it gives up and leaves the closing to Close.
func (s *Stream) finish() {
	nc := s.conn.Conn()
	deadline := time.Now().Add(s.finishWait)
	_ = nc.SetWriteDeadline(deadline)
	_ = nc.SetReadDeadline(deadline)
	defer func() {
		_ = nc.SetWriteDeadline(time.Time{})
		_ = nc.SetReadDeadline(time.Time{})
	}()
	fe := s.conn.Frontend()
	fe.Send(&pgproto3.CopyDone{})
	if err := fe.Flush(); err != nil {
		return
	}
	for {
		msg, err := s.conn.ReceiveMessage(context.Background())
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.CopyDone, *pgproto3.CommandComplete, *pgproto3.ErrorResponse, *pgproto3.ReadyForQuery:
			return
		}
	}
}

func (s *Stream) loop(ctx context.Context) error {
	// Reads wait on the socket's read deadline (the next status update), not
	// on a context: pgconn watches a cancellable context afresh for every
	// call, which cost more than decoding the message. Cancelling ctx moves
	// the deadline to now, which ends a blocked read.
	nc := s.conn.Conn()
	s.mu.Lock()
	s.looping = true
	s.mu.Unlock()
	defer func() {
		// Before finish sets deadlines of its own.
		s.mu.Lock()
		s.looping = false
		s.mu.Unlock()
	}()
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = nc.SetReadDeadline(time.Now())
		close(cut)
	})
	defer func() {
		if stop() {
			_ = nc.SetReadDeadline(time.Time{})
		} else {
			// Wait for the cut, so that it does not override the deadline
			// finish sets next.
			<-cut
		}
	}()
	// The first status update goes out at once: it confirms the start
	// position, what the target already holds, so the slot advances (and
	// frees WAL) even when sessions keep ending before one interval passed.
	nextStatus := s.now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := s.now()
		if !now.Before(nextStatus) {
			if err := s.sendStatus(); err != nil {
				return err
			}
			nextStatus = now.Add(s.interval)
		}
		if err := s.prepareRead(ctx, nc, now, &nextStatus); err != nil {
			return err
		}
		msg, err := s.conn.ReceiveMessage(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) || isTimeout(err) {
				s.mu.Lock()
				s.deadline = time.Time{} // passed: a status update or an Ack check is due
				s.mu.Unlock()
				continue
			}
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				return s.serverError(err)
			}
			return fmt.Errorf("source: replication stream on slot %q: receive: %w", s.slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			s.busy = s.busy || len(m.Data) > 0 && m.Data[0] == pglogrepl.XLogDataByteID
			if err := s.handleCopyData(ctx, m.Data, &nextStatus); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return s.serverError(pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone, *pgproto3.CommandComplete:
			// A walsender that shuts down after sending everything ends with
			// CommandComplete alone (WalSndDone), otherwise with CopyDone.
			return fmt.Errorf("source: replication stream on slot %q: %w (the server may be shutting down): reconnect and resume", s.slot, ErrStreamEnded)
		case *pgproto3.NoticeResponse:
			if publicationSkipped(m) {
				// The change is lost to the stream: nothing from it on may
				// be acknowledged as applied.
				return fmt.Errorf("source: replication stream: %w", &PublicationDroppedError{Publication: s.publication, Slot: s.slot,
					Err: errors.New(m.Message)})
			}
		case *pgproto3.ParameterStatus:
		default:
			return fmt.Errorf("source: replication stream on slot %q: unexpected %T", s.slot, msg)
		}
	}
}

// serverError is the error of an ErrorResponse the walsender ended the
// stream with.
func (s *Stream) serverError(err error) error {
	if publicationMissing(err) {
		return fmt.Errorf("source: replication stream: %w", &PublicationDroppedError{Publication: s.publication, Slot: s.slot, Err: err})
	}
	return fmt.Errorf("source: replication stream on slot %q: %w", s.slot, classifyPgError(err, s.slot))
}

// prepareRead readies the next socket read: it reports the acked position
// when the armed Ack check is due and no message arrived since it was armed,
// arms the check when the acked position is ahead of what the server was
// told, and sets the read deadline to the next status update or Ack check,
// whichever comes first.
func (s *Stream) prepareRead(ctx context.Context, nc net.Conn, now time.Time, nextStatus *time.Time) error {
	s.mu.Lock()
	due := !s.checkAt.IsZero() && !now.Before(s.checkAt)
	if due {
		s.checkAt = time.Time{}
	}
	ahead := LSN(s.acked.Load()) > s.reportedFlush
	if due && !s.busy && ahead {
		s.mu.Unlock()
		if err := s.sendStatus(); err != nil {
			return err
		}
		*nextStatus = now.Add(s.interval)
		ahead = false
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.checkAt.IsZero() {
		s.busy = false
		if ahead {
			s.checkAt = now.Add(ackQuiet)
		}
	}
	want := *nextStatus
	if !s.checkAt.IsZero() && s.checkAt.Before(want) {
		want = s.checkAt
	}
	if !s.deadline.Equal(want) {
		s.deadline = want
		_ = nc.SetReadDeadline(time.Now().Add(want.Sub(s.now())))
		if err := ctx.Err(); err != nil {
			// Cancelled before the deadline moved: the cancel's deadline may
			// have been overwritten.
			return err
		}
	}
	return nil
}

func (s *Stream) handleCopyData(ctx context.Context, data []byte, nextStatus *time.Time) error {
	if len(data) == 0 {
		return fmt.Errorf("source: replication stream on slot %q: empty CopyData message", s.slot)
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		pkm, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("source: replication stream on slot %q: keepalive: %w", s.slot, err)
		}
		s.noteReceived(pkm.ServerWALEnd)
		if pkm.ReplyRequested {
			return s.sendStatus()
		}
		return nil
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("source: replication stream on slot %q: XLogData: %w", s.slot, err)
		}
		// pgconn reuses its read buffer: the frame gets its own copy.
		f := Frame{
			WALStart:     xld.WALStart,
			ServerWALEnd: xld.ServerWALEnd,
			ServerTime:   xld.ServerTime,
			Data:         append(make([]byte, 0, len(xld.WALData)), xld.WALData...),
		}
		s.noteReceived(max(xld.WALStart, xld.ServerWALEnd))
		return s.deliver(ctx, f, nextStatus)
	default:
		return fmt.Errorf("source: replication stream on slot %q: unknown CopyData message type %q", s.slot, data[0])
	}
}

// isTimeout reports whether err is a read that passed its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// deliver puts f into the Frames channel, waiting while the buffer is full by
// frames or bytes. While it waits the socket is not read (back-pressure: the
// server blocks), but status updates still go out on time so the server does not
// time the connection out.
func (s *Stream) deliver(ctx context.Context, f Frame, nextStatus *time.Time) error {
	size := len(f.Data)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.inChan.release(len(s.frames))
		fits := s.inChan.n == 0 || s.inChan.bytes+size <= s.maxBytes
		if fits {
			select {
			case s.frames <- f:
				s.inChan.push(size)
				return nil
			default:
			}
		}
		now := s.now()
		wait := nextStatus.Sub(now)
		if wait <= 0 {
			if err := s.sendStatus(); err != nil {
				return err
			}
			*nextStatus = now.Add(s.interval)
			continue
		}
		var send chan<- Frame
		if fits {
			send = s.frames
		} else if wait > bytePollInterval {
			wait = bytePollInterval
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case send <- f:
			s.inChan.push(size)
			return nil
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sendStatus sends a standby status update: write = received, flush = apply =
// acked, neither ever lower than last time. pglogrepl.SendStandbyStatusUpdate is
// not used because it replaces a zero flush position with the write position,
// which would confirm WAL that is not durable.
func (s *Stream) sendStatus() error {
	flush := max(LSN(s.acked.Load()), s.reportedFlush)
	write := max(LSN(s.received.Load()), flush, s.reportedWrite)
	msg := encodeStatusUpdate(write, flush, flush, s.now(), false)
	nc := s.conn.Conn()
	_ = nc.SetWriteDeadline(s.now().Add(statusWriteTimeout))
	err := s.conn.Frontend().SendUnbufferedEncodedCopyData(msg)
	_ = nc.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("source: replication stream on slot %q: send status update: %w", s.slot, err)
	}
	s.reportedWrite, s.reportedFlush = write, flush
	return nil
}

// encodeStatusUpdate encodes a Standby Status Update ('r') as a complete CopyData
// message ready for the wire.
func encodeStatusUpdate(write, flush, apply LSN, now time.Time, replyRequested bool) []byte {
	const bodyLen = 1 + 8 + 8 + 8 + 8 + 1
	buf := make([]byte, 1+4+bodyLen)
	buf[0] = 'd'
	binary.BigEndian.PutUint32(buf[1:], uint32(4+bodyLen))
	buf[5] = pglogrepl.StandbyStatusUpdateByteID
	binary.BigEndian.PutUint64(buf[6:], uint64(write))
	binary.BigEndian.PutUint64(buf[14:], uint64(flush))
	binary.BigEndian.PutUint64(buf[22:], uint64(apply))
	binary.BigEndian.PutUint64(buf[30:], uint64(toPgMicros(now)))
	if replyRequested {
		buf[38] = 1
	}
	return buf
}

// pgEpochMicros is 2000-01-01 00:00:00 UTC in microseconds since the Unix epoch.
const pgEpochMicros = 946684800 * 1000000

// toPgMicros converts a time to PostgreSQL's microseconds since 2000-01-01 UTC.
func toPgMicros(t time.Time) int64 { return t.UnixMicro() - pgEpochMicros }

// frameSizes is a FIFO of the sizes of the frames sent into the Frames channel.
// Since the channel is FIFO too, the frames still in it are always the newest
// len(channel) entries: release drops the older ones, whose frames the consumer
// has taken, so bytes is the byte count of what waits in the channel.
type frameSizes struct {
	ring  []int
	head  int
	n     int
	bytes int
}

func newFrameSizes(capacity int) frameSizes { return frameSizes{ring: make([]int, capacity)} }

func (q *frameSizes) push(size int) {
	q.ring[(q.head+q.n)%len(q.ring)] = size
	q.n++
	q.bytes += size
}

func (q *frameSizes) release(inChannel int) {
	for q.n > inChannel {
		q.bytes -= q.ring[q.head]
		q.head = (q.head + 1) % len(q.ring)
		q.n--
	}
}
