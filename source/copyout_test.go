package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// copyReadBytes is the size of the buffer a snapshot connection's frontend
// reads through (apply/snapshot's Conn).
const copyReadBytes = 256 << 10

// copyCounts is what a COPY's count function was given.
type copyCounts struct{ rows, bytes atomic.Int64 }

func (c *copyCounts) count(rows, bytes int64) {
	c.rows.Add(rows)
	c.bytes.Add(bytes)
}

// fakeSource is the server end of a connection: it checks the query and
// answers with the messages a test gives it. The client's frontend reads
// through a buffer, as a snapshot connection's does.
func fakeSource(t *testing.T) (client net.Conn, fe *pgproto3.Frontend, in *bufio.Reader, be *pgproto3.Backend, server net.Conn) {
	t.Helper()
	client, server = net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	in = bufio.NewReaderSize(client, copyReadBytes)
	return client, pgproto3.NewFrontend(in, client), in, pgproto3.NewBackend(server, server), server
}

// serve reads the query, then sends msgs, each flushed on its own.
func serve(t *testing.T, be *pgproto3.Backend, msgs ...pgproto3.BackendMessage) chan error {
	done := make(chan error, 1)
	go func() {
		msg, err := be.Receive()
		if err != nil {
			done <- err
			return
		}
		if q, ok := msg.(*pgproto3.Query); !ok || !strings.HasPrefix(q.String, "COPY") {
			done <- fmt.Errorf("got %#v, want the COPY query", msg)
			return
		}
		for _, m := range msgs {
			be.Send(m)
			if err := be.Flush(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// readAll reads c as pgconn's CopyFrom does: into a 64 kB buffer at a time.
func readAll(c io.Reader) ([]byte, error) {
	var out bytes.Buffer
	buf := make([]byte, 65531)
	for {
		n, err := c.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.Bytes(), err
		}
	}
}

func TestCopyOutReadsEveryRowThenEOF(t *testing.T) {
	nc, fe, in, be, _ := fakeSource(t)
	var want bytes.Buffer
	msgs := []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}, &pgproto3.NoticeResponse{Message: "hello"}}
	const rows = 2*countBatch + 7
	for i := 0; i < rows; i++ {
		// Some rows larger than a Read's buffer, so a row spans Reads.
		row := bytes.Repeat([]byte{byte(i)}, 1+i%300+(i%500/499)*100000)
		want.Write(row)
		msgs = append(msgs, &pgproto3.CopyData{Data: row})
	}
	msgs = append(msgs, &pgproto3.CopyDone{}, &pgproto3.CommandComplete{CommandTag: []byte("COPY 2055")}, &pgproto3.ReadyForQuery{TxStatus: 'T'})
	served := serve(t, be, msgs...)

	run := &copyCounts{}
	c, err := StartCopyOut(context.Background(), fe, in, nc, "COPY (SELECT 1) TO STDOUT", run.count)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(c)
	if err != io.EOF {
		t.Fatalf("Read ended with %v, want io.EOF", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes, want %d (the rows' payloads, in order)", len(got), want.Len())
	}
	srcErr, reusable := c.Finish(nil)
	if srcErr != nil || !reusable {
		t.Fatalf("Finish: %v, reusable %v; want no error and a reusable connection", srcErr, reusable)
	}
	if c.Rows() != rows || run.rows.Load() != rows || run.bytes.Load() != int64(want.Len()) {
		t.Errorf("counted %d rows (table %d), %d bytes; want %d rows, %d bytes", c.Rows(), run.rows.Load(), run.bytes.Load(), rows, want.Len())
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// A Read returns the rows the source has sent rather than wait for more, so
// the loader passes them on while the source produces the next; all the rows
// already read arrive in one Read, not one at a time.
func TestCopyOutReturnsWithoutWaiting(t *testing.T) {
	nc, fe, in, be, server := fakeSource(t)
	first := []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}}
	// 25 kB in all, more than the frontend's buffer of 8 kB; its first 8 kB
	// end with a message (the response's 8 bytes, one CopyData message of 504
	// and 15 of 512), where nothing of the next is in the frontend's buffer
	// but all of it is in the connection's.
	for i := range 50 {
		row := fmt.Sprintf("row %02d ", i)
		size := 512 - 5
		if i == 0 {
			size -= 8
		}
		first = append(first, &pgproto3.CopyData{Data: []byte(row + strings.Repeat("x", size-len(row)-1) + "\n")})
	}
	served := make(chan error, 1)
	more := make(chan struct{})
	go func() {
		if _, err := be.Receive(); err != nil {
			served <- err
			return
		}
		// All 50 rows in one write, as a server's send buffer goes out.
		for _, m := range first {
			be.Send(m)
		}
		if err := be.Flush(); err != nil {
			served <- err
			return
		}
		<-more
		be.Send(&pgproto3.CopyData{Data: []byte("last\n")})
		be.Send(&pgproto3.CopyDone{})
		be.Send(&pgproto3.CommandComplete{CommandTag: []byte("COPY 51")})
		be.Send(&pgproto3.ReadyForQuery{TxStatus: 'T'})
		served <- be.Flush()
	}()
	c, err := StartCopyOut(context.Background(), fe, in, nc, "COPY t TO STDOUT", (&copyCounts{}).count)
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		data string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		buf := make([]byte, 64<<10)
		n, err := c.Read(buf)
		got <- read{string(buf[:n]), err}
	}()
	select {
	case r := <-got:
		if r.err != nil || !strings.HasPrefix(r.data, "row 00 ") || !strings.Contains(r.data, "row 49 ") || strings.Count(r.data, "\n") != 50 {
			t.Fatalf("first Read: %d bytes (%.30q…), %v; want the 50 rows sent", len(r.data), r.data, r.err)
		}
	case <-time.After(10 * time.Second):
		server.Close()
		t.Fatal("the first Read waited for more rows than the source had sent")
	}
	close(more)
	rest, err := readAll(c)
	if err != io.EOF || string(rest) != "last\n" {
		t.Fatalf("then read %q, %v; want the last row, then io.EOF", rest, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestCopyOutServerError(t *testing.T) {
	nc, fe, in, be, _ := fakeSource(t)
	serve(t, be, &pgproto3.CopyOutResponse{}, &pgproto3.CopyData{Data: []byte("1\n")},
		&pgproto3.ErrorResponse{Severity: "ERROR", Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgproto3.ReadyForQuery{TxStatus: 'E'})
	c, err := StartCopyOut(context.Background(), fe, in, nc, "COPY t TO STDOUT", (&copyCounts{}).count)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(c)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57P01" || string(got) != "1\n" {
		t.Fatalf("read %q, then %v; want the row, then the server's error", got, err)
	}
	srcErr, reusable := c.Finish(errors.New("COPY from stdin failed"))
	if !errors.As(srcErr, &pgErr) || reusable {
		t.Fatalf("Finish: %v, reusable %v; want the server's error, not reusable", srcErr, reusable)
	}
}

func TestCopyOutConnectionLost(t *testing.T) {
	nc, fe, in, be, server := fakeSource(t)
	served := serve(t, be, &pgproto3.CopyOutResponse{}, &pgproto3.CopyData{Data: []byte("1\n")})
	c, err := StartCopyOut(context.Background(), fe, in, nc, "COPY t TO STDOUT", (&copyCounts{}).count)
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-served; server.Close() }()
	_, err = readAll(c)
	if err == nil || err == io.EOF || !strings.Contains(err.Error(), "source closed the connection") {
		t.Fatalf("Read ended with %v, want the lost connection", err)
	}
	if srcErr, reusable := c.Finish(err); srcErr == nil || reusable {
		t.Fatalf("Finish: %v, reusable %v; want the source's error", srcErr, reusable)
	}
}

// waitingReader is the source side of a fake connection that says when a
// read begins after all of the first n bytes were read: a reader waiting for
// more than the server sent.
type waitingReader struct {
	net.Conn
	n       int
	read    int // bytes read so far; only the reading goroutine uses it
	waiting chan struct{}
	once    sync.Once
}

func (w *waitingReader) Read(p []byte) (int, error) {
	if w.read >= w.n {
		w.once.Do(func() { close(w.waiting) })
	}
	k, err := w.Conn.Read(p)
	w.read += k
	return k, err
}

// A target that fails while the loader's goroutine waits in Read for the
// source: Finish cuts the wait short and blames nothing on the source.
func TestCopyOutTargetFailsFirst(t *testing.T) {
	nc, server := net.Pipe()
	t.Cleanup(func() { nc.Close(); server.Close() })
	response, err := (&pgproto3.CopyOutResponse{}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := &waitingReader{Conn: nc, n: len(response), waiting: make(chan struct{})}
	in := bufio.NewReaderSize(src, copyReadBytes)
	fe, be := pgproto3.NewFrontend(in, nc), pgproto3.NewBackend(server, server)
	serve(t, be, &pgproto3.CopyOutResponse{})
	c, err := StartCopyOut(context.Background(), fe, in, nc, "COPY t TO STDOUT", (&copyCounts{}).count)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() { _, err := readAll(c); readErr <- err }()
	// Read waits for a row that never comes.
	select {
	case <-src.waiting:
	case err := <-readErr:
		t.Fatalf("Read returned %v, want it to wait for a row", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not wait for the source after the CopyOutResponse")
	}
	srcErr, reusable := c.Finish(errors.New("duplicate key"))
	if srcErr != nil || reusable {
		t.Fatalf("Finish: %v, reusable %v; want no source error, not reusable", srcErr, reusable)
	}
	select {
	case <-readErr:
	case <-time.After(10 * time.Second):
		t.Fatal("the Read waiting for the source did not return after Finish")
	}
}

func TestCopyOutContextCanceled(t *testing.T) {
	nc, fe, in, be, _ := fakeSource(t)
	serve(t, be, &pgproto3.CopyOutResponse{})
	ctx, cancel := context.WithCancel(context.Background())
	c, err := StartCopyOut(ctx, fe, in, nc, "COPY t TO STDOUT", (&copyCounts{}).count)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := readAll(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read ended with %v, want context.Canceled", err)
	}
	if _, reusable := c.Finish(context.Canceled); reusable {
		t.Fatal("Finish: the connection is reusable after its deadline was set")
	}
}
