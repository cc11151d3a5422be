package source

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFatalAndRetryable: the errors a new session cures and those it does
// not, among a PostgreSQL server's and its connection's.
func TestFatalAndRetryable(t *testing.T) {
	for _, c := range []struct {
		err          error
		fatal, retry bool
	}{
		{fmt.Errorf("start: %w", ErrSlotInUse), false, true},
		{fmt.Errorf("stream: %w", ErrStreamEnded), false, true},
		{fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), false, true},
		{fmt.Errorf("query: %w", pgconn.ErrConnClosed), false, true},
		{&pgconn.PgError{Code: "57P01"}, false, true},
		{&pgconn.PgError{Code: "08006"}, false, true},
		{&pgconn.PgError{Code: "28P01"}, true, false},
		{&pgconn.PgError{Code: "3D000"}, true, false},
		{&pgconn.PgError{Code: "42501"}, true, false},
		{&pgconn.PgError{Code: "23505"}, false, false},
		{&pgconn.PgError{}, false, false},
		{&PreflightError{Problems: []error{ErrWALLevel}}, true, false},
		{fmt.Errorf("connect: %w", x509.UnknownAuthorityError{}), true, false},
		{fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}), false, true},
		{errors.New("server refused TLS connection"), false, false}, // not pgconn's
	} {
		if got := Fatal(c.err); got != c.fatal {
			t.Errorf("Fatal(%v) = %v, want %v", c.err, got, c.fatal)
		}
		if got := Retryable(c.err); got != c.retry {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.retry)
		}
	}
}

// TestTLSRefusedIsFatal: a server that refuses the TLS the settings require
// (it answers the SSLRequest with N) fails the connection for good.
func TestTLSRefusedIsFatal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 8)
			if _, err := io.ReadFull(c, buf); err == nil {
				_, _ = c.Write([]byte{'N'})
			}
			c.Close()
		}
	}()
	_, err = pgconn.Connect(context.Background(), fmt.Sprintf("postgres://u@%s/db?sslmode=require&connect_timeout=5", ln.Addr()))
	if err == nil {
		t.Fatal("connected to a server that refused TLS")
	}
	if !Fatal(err) {
		t.Errorf("Fatal(%v) = false, want true: the settings or the server must change", err)
	}
	if !Fatal(DescribeConnectError("source", &pgconn.Config{Host: "127.0.0.1", Port: 1}, err)) {
		t.Errorf("the described error is no longer fatal")
	}
}
