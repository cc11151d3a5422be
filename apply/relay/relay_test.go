package relay

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("apply: commit: %w", sink.Retryable(errors.New("conn lost"))), true},
		{fmt.Errorf("start: %w", source.ErrSlotInUse), true},
		{fmt.Errorf("stream: %w", source.ErrStreamEnded), true},
		{fmt.Errorf("create slot: %w: %w", source.ErrSnapshotTooLarge, &pgconn.PgError{Code: "40001", Message: "initial slot snapshot too large"}), true},
		{fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, false},
		{&pgconn.PgError{Code: "3D000", Message: "database does not exist"}, false},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{&source.PreflightError{Problems: []error{source.ErrWALLevel}}, false},
		{errors.New("apply: insert on public.t at 0/1: value too long"), false},
		{fmt.Errorf("apply: spill transaction 7 to /tmp/x: %w", &fs.PathError{Op: "write", Path: "/tmp/x", Err: syscall.ENOSPC}), false},
		{errors.New("failed to connect to `user=u database=d`: 127.0.0.1:5432 (127.0.0.1): server refused TLS connection"), false},
		{fmt.Errorf("connect: %w", x509.UnknownAuthorityError{}), false},
		{fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}

func TestShapeDiffers(t *testing.T) {
	for _, c := range []struct {
		was, now, compared string
		differs            bool
	}{
		{"filter: ; column list: none", "filter: ; column list: none", "filter: ; column list: none", false},
		{"filter: ; column list: attnums 1, 2", "filter: ; column list: attnums 1, 2, 3", "filter: ; column list: attnums 1, 2, 3", true},
		{"filter: ; column list: none", "filter: ; column list: attnums 1, 2", "filter: ; column list: attnums 1, 2", true},
		// Stored by a pgrelay whose shapes had no column list.
		{"filter: (k > 4)", "filter: (k > 4); column list: attnums 1, 2", "filter: (k > 4)", false},
		{"filter: (k > 4)", "filter: (k > 6); column list: none", "filter: (k > 6)", true},
		{"filter: ; partitions: public.a", "filter: ; partitions: public.a, public.b; column list: none", "filter: ; partitions: public.a, public.b", true},
	} {
		compared, differs := shapeDiffers(c.was, c.now)
		if compared != c.compared || differs != c.differs {
			t.Errorf("shapeDiffers(%q, %q) = %q, %v; want %q, %v", c.was, c.now, compared, differs, c.compared, c.differs)
		}
	}
}

// TestRefusedHint: the error of a change the target refused (the sink marks
// it sink.ErrChangeRefused) says what to do; other errors are left as they are.
func TestRefusedHint(t *testing.T) {
	change := func(code string, refused bool) error {
		return fmt.Errorf("apply: commit of 1 source transaction: %w", &sink.ChangeError{Op: "copy into", Table: `"public"."t"`, LSN: 0x10,
			Err: &pgconn.PgError{Code: code, Message: "refused"}, Refused: refused})
	}
	for _, c := range []struct {
		name string
		err  error
		hint bool
	}{
		{"check violation", change("23514", true), true},
		{"unique violation", change("23505", true), true},
		{"invalid input", change("22P02", true), true},
		{"connection", change("08006", false), false},
		{"permission", change("42501", false), false},
		{"not a change", sink.ValueRejected(&pgconn.PgError{Code: "23505", Message: "refused"}), false},
		{"copied row", fmt.Errorf("snapshot: copy public.t into the target: %w", &sink.ChangeError{Op: "copy (input line 3) into", Table: `"public"."t"`,
			Err: &pgconn.PgError{Code: "23505", Message: "refused"}, Refused: true}), true},
		{"schema change", fmt.Errorf("apply: create or alter target table for public.t at 0/10: %w", &sink.ChangeError{Op: sink.OpChangeSchema, Table: `"public"."t"`,
			Err: &pgconn.PgError{Code: "22P02", Message: "invalid input syntax for type integer"}, Refused: true}), true},
	} {
		got := refusedHint(c.err)
		if has := strings.Contains(got.Error(), "make it take it"); has != c.hint {
			t.Errorf("%s: %q, hint %v, want %v", c.name, got, has, c.hint)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the hint does not wrap the error", c.name)
		}
		if c.hint && strings.Contains(got.Error(), "resumes with this source transaction") == (c.name == "copied row") {
			t.Errorf("%s: %q: a copied row has no source transaction to resume with; a change has", c.name, got)
		}
		// A refused ALTER TABLE from the stream is no copied row: a new run
		// copies nothing (it once said it did).
		if strings.Contains(got.Error(), "snapshot copy") != (c.name == "copied row") {
			t.Errorf("%s: %q: only a copied row is said to be of the snapshot copy", c.name, got)
		}
	}
}
