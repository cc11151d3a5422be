package source

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeWalsender plays the server side of a replication connection over a
// net.Pipe: startup, IDENTIFY_SYSTEM, START_REPLICATION, then whatever the test
// sends. net.Pipe has no buffer, so a client that does not read blocks the
// server's writes at once: back-pressure is exact.
type fakeWalsender struct {
	t       *testing.T
	conn    net.Conn
	be      *pgproto3.Backend
	version string
	queries chan string
	// startReplies answers each START_REPLICATION, in order; nil means
	// CopyBothResponse.
	startReplies []*pgproto3.ErrorResponse

	statuses chan statusUpdate // status updates received while streaming
	// events lists, in order, what the client sent while streaming: "status"
	// for a status update, "copydone" for CopyDone.
	events chan string
	// A client's CopyDone is answered as a walsender does (CopyDone,
	// CommandComplete, ReadyForQuery) after sending tail as XLogData, or not
	// at all when ignoreCopyDone.
	tail           [][]byte
	ignoreCopyDone bool
	sendMu         sync.Mutex
	done           chan struct{}
}

type statusUpdate struct {
	write, flush, apply LSN
	clientTime          time.Time
	replyRequested      bool
}

// dialFake connects a ReplConn to a fake walsender.
func dialFake(t *testing.T, f *fakeWalsender) *ReplConn {
	t.Helper()
	client, server := net.Pipe()
	f.t = t
	f.conn = server
	f.be = pgproto3.NewBackend(server, server)
	if f.version == "" {
		f.version = "16.4"
	}
	f.queries = make(chan string, 16)
	f.statuses = make(chan statusUpdate, 1024)
	f.events = make(chan string, 1024)
	f.done = make(chan struct{})
	go f.serve()
	t.Cleanup(func() {
		_ = server.Close()
		<-f.done
	})

	cfg, err := pgconn.ParseConfig("postgres://tester:s3cret@127.0.0.1:5432/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) { return client, nil }
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := connectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to fake walsender: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return rc
}

func (f *fakeWalsender) serve() {
	defer close(f.done)
	startup, err := f.be.ReceiveStartupMessage()
	if err != nil {
		return
	}
	sm, ok := startup.(*pgproto3.StartupMessage)
	if !ok || sm.Parameters["replication"] != "database" {
		f.t.Errorf("fake walsender: startup %#v lacks replication=database", startup)
		return
	}
	f.send(&pgproto3.AuthenticationOk{},
		&pgproto3.ParameterStatus{Name: "server_version", Value: f.version},
		&pgproto3.BackendKeyData{ProcessID: 42, SecretKey: []byte{0, 0, 0, 1}},
		&pgproto3.ReadyForQuery{TxStatus: 'I'})
	for {
		msg, err := f.be.Receive()
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			q := m.String
			f.queries <- q
			switch {
			case strings.HasPrefix(q, "IDENTIFY_SYSTEM"):
				f.send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{
					{Name: []byte("systemid")}, {Name: []byte("timeline")}, {Name: []byte("xlogpos")}, {Name: []byte("dbname")}}},
					&pgproto3.DataRow{Values: [][]byte{[]byte("7000000000000000001"), []byte("1"), []byte("0/1000000"), []byte("db")}},
					&pgproto3.CommandComplete{CommandTag: []byte("IDENTIFY_SYSTEM")},
					&pgproto3.ReadyForQuery{TxStatus: 'I'})
			case strings.HasPrefix(q, "CREATE_REPLICATION_SLOT"):
				name := strings.Fields(q)[1]
				f.send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{
					{Name: []byte("slot_name")}, {Name: []byte("consistent_point")}, {Name: []byte("snapshot_name")}, {Name: []byte("output_plugin")}}},
					&pgproto3.DataRow{Values: [][]byte{[]byte(name), []byte("0/1A2B3C"), []byte("00000003-00000002-1"), []byte("pgoutput")}},
					&pgproto3.CommandComplete{CommandTag: []byte("CREATE_REPLICATION_SLOT")},
					&pgproto3.ReadyForQuery{TxStatus: 'I'})
			case strings.HasPrefix(q, "START_REPLICATION"):
				var reply *pgproto3.ErrorResponse
				if len(f.startReplies) > 0 {
					reply, f.startReplies = f.startReplies[0], f.startReplies[1:]
				}
				if reply != nil {
					f.send(reply, &pgproto3.ReadyForQuery{TxStatus: 'I'})
					continue
				}
				f.send(&pgproto3.CopyBothResponse{})
				f.readStatuses()
				return
			default:
				f.send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42601", Message: "fake walsender: unsupported " + q},
					&pgproto3.ReadyForQuery{TxStatus: 'I'})
			}
		case *pgproto3.Terminate:
			return
		}
	}
}

// readStatuses reads the client's CopyData messages while streaming.
func (f *fakeWalsender) readStatuses() {
	for {
		msg, err := f.be.Receive()
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			d := m.Data
			if len(d) != 34 || d[0] != 'r' {
				f.t.Errorf("fake walsender: unexpected CopyData %q", d)
				continue
			}
			f.statuses <- statusUpdate{
				write:          LSN(binary.BigEndian.Uint64(d[1:])),
				flush:          LSN(binary.BigEndian.Uint64(d[9:])),
				apply:          LSN(binary.BigEndian.Uint64(d[17:])),
				clientTime:     time.UnixMicro(int64(binary.BigEndian.Uint64(d[25:])) + pgEpochMicros),
				replyRequested: d[33] != 0,
			}
			f.events <- "status"
		case *pgproto3.CopyDone:
			f.events <- "copydone"
			if f.ignoreCopyDone {
				continue
			}
			for i, data := range f.tail {
				f.xlog(LSN(0xF000+i), data)
			}
			f.send(&pgproto3.CopyDone{}, &pgproto3.CommandComplete{CommandTag: []byte("COPY 0")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		case *pgproto3.Terminate:
			return
		}
	}
}

func (f *fakeWalsender) send(msgs ...pgproto3.BackendMessage) {
	f.sendMu.Lock()
	defer f.sendMu.Unlock()
	for _, m := range msgs {
		f.be.Send(m)
	}
	_ = f.be.Flush()
}

// xlog sends one XLogData message carrying data at walStart.
func (f *fakeWalsender) xlog(walStart LSN, data []byte) {
	buf := make([]byte, 0, 25+len(data))
	buf = append(buf, pglogrepl.XLogDataByteID)
	buf = binary.BigEndian.AppendUint64(buf, uint64(walStart))
	buf = binary.BigEndian.AppendUint64(buf, uint64(walStart))
	buf = binary.BigEndian.AppendUint64(buf, uint64(toPgMicros(time.Now())))
	buf = append(buf, data...)
	f.send(&pgproto3.CopyData{Data: buf})
}

// keepalive sends a primary keepalive.
func (f *fakeWalsender) keepalive(walEnd LSN, replyRequested bool) {
	buf := make([]byte, 0, 18)
	buf = append(buf, pglogrepl.PrimaryKeepaliveMessageByteID)
	buf = binary.BigEndian.AppendUint64(buf, uint64(walEnd))
	buf = binary.BigEndian.AppendUint64(buf, uint64(toPgMicros(time.Now())))
	if replyRequested {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	f.send(&pgproto3.CopyData{Data: buf})
}

// nextStatus waits for the next status update.
func (f *fakeWalsender) nextStatus(t *testing.T, within time.Duration) statusUpdate {
	t.Helper()
	select {
	case st := <-f.statuses:
		return st
	case <-time.After(within):
		t.Fatalf("no status update within %v", within)
		return statusUpdate{}
	}
}

// drainStatuses discards status updates received so far.
func (f *fakeWalsender) drainStatuses() {
	for {
		select {
		case <-f.statuses:
		default:
			return
		}
	}
}
