package relay

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// sessionConns are the connections a session opens before anything else,
// all at once: a new connection costs a server process, an authentication
// and a round trip or two (20-30 ms each on a small machine), and a session
// opened a dozen one after the other before its first row was copied.
type sessionConns struct {
	tgt sink.Target
	src *pgx.Conn // the session's plain source connection
	// repl is a replication connection to the source, or replErr why it did
	// not open (preflight reports it); the session creates the slot on it
	// and streams from it.
	repl    *source.ReplConn
	replErr error
}

// openSession opens the session's connections concurrently. A target it
// cannot open is reported first, as the session always did, then a source
// it cannot open.
func (r *Relay) openSession(ctx context.Context) (*sessionConns, error) {
	cfg := r.cfg
	c := &sessionConns{}
	var tgtErr, srcErr error
	var wg sync.WaitGroup
	// Each is set only when it opened: a nil pointer in an interface is not
	// nil.
	wg.Go(func() {
		tgt, err := r.target.Open(ctx, ForApply)
		if err != nil {
			tgtErr = err
			return
		}
		c.tgt = tgt
		// The metadata and lock connections, which the session's checks
		// and lock need next.
		if pc, ok := tgt.(sink.Preconnecter); ok {
			pc.Preconnect(ctx, 0)
		}
	})
	wg.Go(func() {
		if conn, err := source.ConnectPlain(ctx, cfg.SourceURL); err != nil {
			srcErr = err
		} else {
			c.src = conn
		}
	})
	wg.Go(func() {
		if conn, err := source.Connect(ctx, cfg.SourceURL); err != nil {
			c.replErr = err
		} else {
			c.repl = conn
		}
	})
	wg.Wait()
	for _, err := range []error{tgtErr, srcErr} {
		if err != nil {
			c.close(ctx)
			return nil, err
		}
	}
	return c, nil
}

// takeRepl hands the replication connection over to the caller, who closes
// it; nil when it did not open or was taken.
func (c *sessionConns) takeRepl() *source.ReplConn {
	r := c.repl
	c.repl = nil
	return r
}

// close closes what is still the session's.
func (c *sessionConns) close(ctx context.Context) {
	// Background, not ctx without its cancel: pgx watches any other context
	// with a goroutine of its own, for a close that cannot be cut short
	// either way.
	ctx = context.Background()
	// At once, as they opened: each close waits for its own round trip.
	var wg sync.WaitGroup
	if c.tgt != nil {
		wg.Go(func() { _ = c.tgt.Close(ctx) })
	}
	if c.src != nil {
		wg.Go(func() { _ = c.src.Close(ctx) })
	}
	if c.repl != nil {
		wg.Go(func() { _ = c.repl.Close(ctx) })
	}
	wg.Wait()
}
