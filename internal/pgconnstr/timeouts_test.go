package pgconnstr

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

func TestWithTimeouts(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	t.Setenv("PGOPTIONS", "")
	bounds := Timeouts{Connect: 10 * time.Second, Statement: 30 * time.Second}
	for in, want := range map[string]string{
		"postgres://u@h/db":                      "postgres://u@h/db?connect_timeout=10&statement_timeout=30000",
		"postgres://u:p?w@h/db":                  "postgres://u:p?w@h/db?connect_timeout=10&statement_timeout=30000",
		"postgres://u@h/db?sslmode=disable":      "postgres://u@h/db?sslmode=disable&connect_timeout=10&statement_timeout=30000",
		"postgres://u@h/db?connect_timeout=0":    "postgres://u@h/db?connect_timeout=0&statement_timeout=30000",
		"postgres://u@h/db?statement_timeout=5s": "postgres://u@h/db?statement_timeout=5s&connect_timeout=10",
		"postgres://u@h/db?options=-c%20statement_timeout%3D1min&connect_timeout=3": "postgres://u@h/db?options=-c%20statement_timeout%3D1min&connect_timeout=3",
		"host=h user=u": "host=h user=u connect_timeout=10 statement_timeout=30000",
		"host=h options='-c statement_timeout=0' ": "host=h options='-c statement_timeout=0' connect_timeout=10",
		"host=h password='a connect_timeout=1'":    "host=h password='a connect_timeout=1' connect_timeout=10 statement_timeout=30000",
		"mysql://u@h/db":                           "mysql://u@h/db",
	} {
		if got := WithTimeouts(in, bounds); got != want {
			t.Errorf("WithTimeouts(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv("PGCONNECT_TIMEOUT", "3")
	t.Setenv("PGOPTIONS", "-c statement_timeout=2s")
	if got := WithTimeouts("host=h", bounds); got != "host=h" {
		t.Errorf("with PGCONNECT_TIMEOUT and PGOPTIONS set: %q", got)
	}
	// What WithTimeouts adds, pgx takes.
	t.Setenv("PGCONNECT_TIMEOUT", "")
	t.Setenv("PGOPTIONS", "")
	cfg, err := Parse(WithTimeouts("postgres://u@h/db?sslmode=disable", bounds))
	if err != nil || cfg.ConnectTimeout != 10*time.Second || cfg.RuntimeParams["statement_timeout"] != "30000" {
		t.Errorf("parsed: %v, %v", cfg, err)
	}
}

func TestGUCDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1500": 1500 * time.Millisecond, "5s": 5 * time.Second, "5 s": 5 * time.Second, "2min": 2 * time.Minute,
		"1h": time.Hour, "0": 0, "0.5s": 500 * time.Millisecond, "250ms": 250 * time.Millisecond,
	} {
		if got, ok := gucDuration(in); !ok || got != want {
			t.Errorf("gucDuration(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "s", "5 seconds", "-1", "1e400h"} {
		if _, ok := gucDuration(bad); ok {
			t.Errorf("gucDuration(%q) accepted", bad)
		}
	}
}

// frozenServer accepts connections, lets them log in and then never answers
// a query: a server that stopped after the session began.
func frozenServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				be := pgproto3.NewBackend(c, c)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				be.Send(&pgproto3.AuthenticationOk{})
				be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "17.0"})
				be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
				be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				if be.Flush() != nil {
					return
				}
				for {
					if _, err := be.Receive(); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// A session that starts with a statement_timeout stops waiting for a server
// that answers nothing (somewhat after that timeout); one without, and a
// replication connection, wait as long as their context lets them.
func TestReplyWatch(t *testing.T) {
	addr := frozenServer(t)
	query := func(url string, wait time.Duration) error {
		cfg, err := ParsePgx(url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, "SELECT 1")
		return err
	}
	base := "postgres://u@" + addr + "/db?sslmode=disable&statement_timeout=200"
	err := query(base, time.Minute)
	var nr *NoReplyError
	if !errors.As(err, &nr) || nr.StatementTimeout != 200*time.Millisecond {
		t.Fatalf("statement_timeout=200: %v; want a NoReplyError", err)
	}
	// The setting wins over options on the server; so it does here.
	if err := query(base+"&options=-c%20statement_timeout%3D0", time.Minute); !errors.As(err, &nr) {
		t.Errorf("statement_timeout=200 with options=-c statement_timeout=0: %v; want a NoReplyError", err)
	}
	if err := query("postgres://u@"+addr+"/db?sslmode=disable&options=-c%20statement_timeout%3D300ms", time.Minute); !errors.As(err, &nr) {
		t.Errorf("options=-c statement_timeout=300ms: %v; want a NoReplyError", err)
	}
	for _, url := range []string{
		"postgres://u@" + addr + "/db?sslmode=disable",
		"postgres://u@" + addr + "/db?sslmode=disable&statement_timeout=0",
		"postgres://u@" + addr + "/db?sslmode=disable&statement_timeout=200&replication=database",
	} {
		if err := query(url, 1500*time.Millisecond); errors.As(err, &nr) || err == nil {
			t.Errorf("%s: %v; want the context's deadline", url, err)
		}
	}
}
