package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/source"
)

// Conn is a source connection of the copy. Its frontend reads through a
// buffer of sourceReadBytes: the frontend's own reads are of 8 kB, and a copy
// read 228 MB in 45,000 reads, each a wait for the socket; with the buffer,
// 16,000, and pgrelay's CPU for the copy fell by a sixth.
type Conn struct {
	conn *pgx.Conn
	in   *bufio.Reader
}

// Dial opens a copy connection to the source at url.
func Dial(ctx context.Context, url string) (*Conn, error) {
	cfg, err := source.ParseConnConfig(url)
	if err != nil {
		return nil, fmt.Errorf("snapshot: parse the source URL: %w", err)
	}
	c := &Conn{}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		c.in = bufio.NewReaderSize(r, sourceReadBytes)
		return pgproto3.NewFrontend(c.in, w)
	}
	if c.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("snapshot: connect to source: %w", err)
	}
	return c, nil
}

// Import begins a read-only repeatable read transaction that sees the
// exported snapshot name.
func (c *Conn) Import(ctx context.Context, name string) error {
	if _, err := c.conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("snapshot: begin: %w", err)
	}
	if _, err := c.conn.Exec(ctx, "SET TRANSACTION SNAPSHOT "+pgquote.Literal(name)); err != nil {
		return fmt.Errorf("snapshot: import snapshot %s (the exporting slot connection must stay open and idle): %w", name, err)
	}
	return nil
}

// Pgx is the connection, for queries of the caller's own.
func (c *Conn) Pgx() *pgx.Conn { return c.conn }

// Close ends the connection.
func (c *Conn) Close(context.Context) { _ = c.conn.Close(context.Background()) }

// ConnPool is copy connections to the source, some opened ahead of their
// use (Predial): a connection costs the source a server process and an
// authentication, 20-30 ms on a small machine, which a session overlaps
// with what it does before the copy. Safe for concurrent use.
type ConnPool struct {
	url     string
	mu      sync.Mutex
	opened  sync.Cond // signaled when a dial ends
	conns   []*Conn
	pending int // dials in flight
}

// NewConnPool returns an empty pool of connections to the source at url.
func NewConnPool(url string) *ConnPool {
	p := &ConnPool{url: url}
	p.opened.L = &p.mu
	return p
}

// Predial starts opening n connections at once. One that fails is left out:
// Get dials again, and reports that error.
func (p *ConnPool) Predial(ctx context.Context, n int) {
	p.mu.Lock()
	p.pending += n
	p.mu.Unlock()
	for range n {
		go func() {
			c, err := Dial(ctx, p.url)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.pending--
			if err == nil {
				p.conns = append(p.conns, c)
			}
			p.opened.Broadcast()
		}()
	}
}

// Get returns an open connection of the pool, waiting for one being dialed,
// or a new one. It is the caller's until Put back.
func (p *ConnPool) Get(ctx context.Context) (*Conn, error) {
	p.mu.Lock()
	for len(p.conns) == 0 && p.pending > 0 {
		p.opened.Wait()
	}
	for len(p.conns) > 0 {
		c := p.conns[len(p.conns)-1]
		p.conns = p.conns[:len(p.conns)-1]
		if !c.conn.IsClosed() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	return Dial(ctx, p.url)
}

// Put gives back a connection Get returned, idle outside a transaction, for
// another use.
func (p *ConnPool) Put(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

// Close waits for the dials in flight and closes the pool's connections.
func (p *ConnPool) Close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.pending > 0 {
		p.opened.Wait()
	}
	// At once: each close is a round of system calls and a server process
	// ending, and this one is between the copy and the stream.
	var wg sync.WaitGroup
	for _, c := range p.conns {
		wg.Go(func() { c.Close(ctx) })
	}
	wg.Wait()
	p.conns = nil
}
