package snapshot

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeServer accepts connections on loopback and logs each in without a
// password once gate lets it (nil: at once), then reads until the client
// leaves. It counts the connections it accepted.
type fakeServer struct {
	ln       net.Listener
	accepted atomic.Int32
	gate     chan struct{}
	wg       sync.WaitGroup
}

func newFakeServer(t *testing.T, gate chan struct{}) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, gate: gate}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *fakeServer) serve(c net.Conn) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		return
	}
	if s.gate != nil {
		<-s.gate
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "17.0"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 2}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := be.Flush(); err != nil {
		return
	}
	for {
		if _, err := be.Receive(); err != nil {
			return
		}
	}
}

func (s *fakeServer) url() string {
	return fmt.Sprintf("postgres://u@%s/db?sslmode=disable&connect_timeout=5", s.ln.Addr())
}

func TestConnPoolUsesPredialedConnections(t *testing.T) {
	ctx := context.Background()
	srv := newFakeServer(t, nil)
	pool := NewConnPool(srv.url())
	pool.Predial(ctx, 2)
	a, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("Get returned one connection twice")
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections after two predialed and two taken, want 2", n)
	}
	pool.Put(a)
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c != a {
		t.Error("Get did not return the connection put back")
	}
	d, err := pool.Get(ctx) // the pool is empty: a new one
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
	for _, c := range []*Conn{b, c, d} {
		c.Close(ctx)
	}
	pool.Close(ctx)
}

func TestConnPoolGetWaitsForTheDialInFlight(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	srv := newFakeServer(t, gate)
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open) // before the server's cleanup, which waits for its handshakes
	pool := NewConnPool(srv.url())
	pool.Predial(ctx, 1)
	got := make(chan error, 1)
	go func() {
		c, err := pool.Get(ctx)
		if err == nil {
			c.Close(ctx)
		}
		got <- err
	}()
	// Get waits for the dial in flight (its goroutine parks in the pool's
	// condition variable) instead of dialing one of its own.
	deadline := time.Now().Add(10 * time.Second)
	for !goroutineWaitsIn("snapshot.(*ConnPool).Get", "sync.(*Cond).Wait") {
		select {
		case err := <-got:
			t.Fatalf("Get returned (%v) before the predialed connection opened", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Get does not wait for the predialed connection")
		}
		time.Sleep(time.Millisecond)
	}
	open()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want the predialed one only", n)
	}
	pool.Close(ctx)
}

func TestConnPoolFailedPredialIsDialedAgain(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	pool := NewConnPool(fmt.Sprintf("postgres://u@%s/db?sslmode=disable&connect_timeout=5", addr))
	pool.Predial(ctx, 2)
	if _, err := pool.Get(ctx); err == nil {
		t.Fatal("Get succeeded with no server")
	}
	pool.Close(ctx)
}

func TestConnPoolCloseClosesWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	srv := newFakeServer(t, nil)
	pool := NewConnPool(srv.url())
	pool.Predial(ctx, 2)
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close(ctx)
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	if c.Pgx().IsClosed() {
		t.Error("Close closed the connection a caller holds")
	}
	pool.mu.Lock()
	left := len(pool.conns)
	pool.mu.Unlock()
	if left != 0 {
		t.Errorf("%d connections left in the pool after Close", left)
	}
	c.Close(ctx)
}

// goroutineWaitsIn reports whether a goroutine's stack holds both fn and
// waitIn (a function it blocks in).
func goroutineWaitsIn(fn, waitIn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, waitIn) {
			return true
		}
	}
	return false
}
