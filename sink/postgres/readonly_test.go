package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/sink"
)

// TestReadOnlyRefusalRetryable: a write a read-only target refuses (25006)
// is retryable, as a *ReadOnlyError that keeps what was refused; other
// errors are not taken for it.
func TestReadOnlyRefusalRetryable(t *testing.T) {
	refused := &ChangeError{Op: "insert into", Table: `"public"."t"`, LSN: 0x10,
		Err: &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}}
	err := classify(refused, false)
	var ro *ReadOnlyError
	if !errors.Is(err, sink.ErrRetryable) || !errors.As(err, &ro) || !errors.Is(err, refused) {
		t.Fatalf("classify(25006) = %v, want a retryable *ReadOnlyError wrapping the refusal", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "takes no writes") || !strings.Contains(msg, "SQLSTATE 25006") {
		t.Errorf("classify(25006) says %q", msg)
	}
	// Explained where the database cannot be reached: still retryable,
	// still saying what it is.
	for _, e := range []error{err, fmt.Errorf("apply: %w", refused.Err)} {
		got := ExplainReadOnly(context.Background(), "postgres://u@127.0.0.1:1/db?connect_timeout=1", e)
		if !errors.Is(got, sink.ErrRetryable) || !errors.As(got, &ro) || !strings.Contains(got.Error(), "takes no writes") {
			t.Errorf("ExplainReadOnly(%v) = %v", e, got)
		}
	}
	for _, e := range []error{nil, errors.New("other"), &pgconn.PgError{Code: "23505"}} {
		if got := ExplainReadOnly(context.Background(), "postgres://u@127.0.0.1:1/db", e); got != e {
			t.Errorf("ExplainReadOnly(%v) = %v, want it unchanged", e, got)
		}
	}
}
