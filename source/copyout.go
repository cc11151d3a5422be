package source

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// CopyOut is the source side of a table's copy: a COPY … TO STDOUT whose
// data the target's loader reads (Read) straight out of the source
// connection's receive buffer. pgconn's CopyTo pushes one row at a time into a writer; a
// pipe between it and the loader cost a goroutine hand-off and two more
// copies of every byte. Here the loader's goroutine pulls: each Read fills
// the loader's buffer with as many CopyData payloads as fit.
//
// The connection must be idle when the COPY starts (a copy worker's
// snapshot transaction, between jobs). After an error the connection is in an
// unknown state and must be closed; after io.EOF it is idle again.
type CopyOut struct {
	fe      *pgproto3.Frontend
	in      *bufio.Reader // under fe, or nil
	pending []byte        // rest of the last CopyData payload; valid until the next Receive
	started bool          // CopyOutResponse seen
	done    bool          // ReadyForQuery seen
	err     error         // the server's error, or the connection's

	// Progress, per CopyData message (one row; in binary format the
	// trailer is one more), passed to count every countBatch.
	count        func(rows, bytes int64)
	rows         int64
	rowsN, bytes int64

	ctx       context.Context
	nc        net.Conn
	stopWatch func() bool
	canceled  atomic.Bool // ctx ended: the read deadline is set
	cut       atomic.Bool // the loader failed: the read deadline is set
	// mu is held by Read, which runs on the loader's goroutine; the loader
	// may return on a target error before that goroutine's last Read does.
	mu sync.Mutex
}

// StartCopyOut sends sql (a COPY … TO STDOUT) through fe, the frontend of
// an idle connection over nc, which reads through in (nil: straight from
// nc). count is given the rows and bytes read since it was last called, from
// the loader's goroutine. When ctx ends before the copy does, nc's read
// deadline cuts the wait short and Read returns ctx's error.
func StartCopyOut(ctx context.Context, fe *pgproto3.Frontend, in *bufio.Reader, nc net.Conn, sql string, count func(rows, bytes int64)) (*CopyOut, error) {
	c := &CopyOut{fe: fe, in: in, count: count, ctx: ctx, nc: nc}
	c.fe.SendQuery(&pgproto3.Query{String: sql})
	if err := c.fe.Flush(); err != nil {
		return nil, fmt.Errorf("send the COPY: %w", err)
	}
	c.stopWatch = context.AfterFunc(ctx, func() {
		c.canceled.Store(true)
		_ = nc.SetReadDeadline(time.Now())
	})
	return c, nil
}

// Read fills p with COPY data. It returns what it has rather than wait for
// more when the connection's buffer is empty, so the loader sends it on
// while the source produces the next rows.
func (c *CopyOut) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(p) {
		if len(c.pending) > 0 {
			k := copy(p[n:], c.pending)
			c.pending = c.pending[k:]
			n += k
			continue
		}
		if c.done || (n > 0 && c.fe.ReadBufferLen() == 0 && c.buffered() == 0) {
			break
		}
		if err := c.receive(); err != nil {
			c.err, c.done = err, true
			break
		}
	}
	if n > 0 {
		return n, nil
	}
	c.flush()
	if c.err != nil {
		return 0, c.err
	}
	return 0, io.EOF
}

// buffered is how many bytes of the source's are read but not yet in fe's
// buffer.
func (c *CopyOut) buffered() int {
	if c.in == nil {
		return 0
	}
	return c.in.Buffered()
}

// receive reads the next message of the COPY's response.
func (c *CopyOut) receive() error {
	msg, err := c.fe.Receive()
	if err != nil {
		if c.cut.Load() {
			return errCut
		}
		if c.canceled.Load() && c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("the source closed the connection during the COPY: %w", err)
		}
		return fmt.Errorf("read the COPY from the source: %w", err)
	}
	switch m := msg.(type) {
	case *pgproto3.CopyData:
		c.pending = m.Data
		c.rows++
		c.rowsN++
		c.bytes += int64(len(m.Data))
		if c.rowsN == countBatch {
			c.flush()
		}
	case *pgproto3.CopyOutResponse:
		c.started = true
	case *pgproto3.ErrorResponse:
		// ReadyForQuery follows; keep the first error.
		if c.err == nil {
			c.err = pgconn.ErrorResponseToPgError(m)
		}
	case *pgproto3.ReadyForQuery:
		c.done = true
		if c.err == nil && !c.started {
			c.err = errors.New("the source answered the COPY without COPY data")
		}
		if c.err != nil {
			return c.err
		}
	case *pgproto3.CopyDone, *pgproto3.CommandComplete, *pgproto3.NoticeResponse,
		*pgproto3.ParameterStatus, *pgproto3.NotificationResponse:
	default:
		return fmt.Errorf("unexpected %T from the source during the COPY", msg)
	}
	return nil
}

// Finish ends the copy's source side once the loader has returned loadErr,
// and returns the source's own error, if any. It reports whether the
// connection can be used again: the loader read the COPY's response to its
// end, without error. After a loader error a Read may still be waiting on the
// source; the read deadline cuts it short, and the connection is done for.
func (c *CopyOut) Finish(loadErr error) (srcErr error, reusable bool) {
	watching := c.stopWatch()
	if loadErr != nil {
		c.cut.Store(true)
		_ = c.nc.SetReadDeadline(time.Now())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flush()
	if errors.Is(c.err, errCut) {
		return nil, false
	}
	return c.err, watching && loadErr == nil && c.done && c.err == nil
}

// countBatch is how many rows are counted before count is called: a table's
// counters are shared by the ranges copied at once.
const countBatch = 1024

// errCut is what a Read cut short by Finish returns: not the source's fault.
var errCut = errors.New("the target's load ended first")

// flush passes what was counted since the last flush to count.
func (c *CopyOut) flush() {
	c.count(c.rowsN, c.bytes)
	c.rowsN, c.bytes = 0, 0
}

// Rows is how many CopyData messages were read: one per row, one more for a
// binary COPY's trailer. Read it after Finish.
func (c *CopyOut) Rows() int64 { return c.rows }
