package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/sink"
)

// TestReadOnlyRefusal: a write a read-only target refuses (25006) is a
// *sink.ReadOnlyError that keeps what was refused, said once however often
// it is classified on its way up; other errors are not taken for it.
func TestReadOnlyRefusal(t *testing.T) {
	refused := changeError(sink.ChangeError{Op: "insert into", Table: `"public"."t"`, LSN: 0x10,
		Err: &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}})
	err := classify(refused, false)
	var ro *sink.ReadOnlyError
	if !errors.Is(err, sink.ErrReadOnly) || !errors.As(err, &ro) || !errors.Is(err, refused) || ro.Database != "" {
		t.Fatalf("classify(25006) = %v, want a *sink.ReadOnlyError wrapping the refusal, its database not known", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "takes no writes") || !strings.Contains(msg, "SQLSTATE 25006") {
		t.Errorf("classify(25006) says %q", msg)
	}
	again := classify(fmt.Errorf("sink/postgres: commit: %w", err), false)
	if n := strings.Count(again.Error(), "takes no writes"); n != 1 {
		t.Errorf("classified twice: %q says it %d times", again, n)
	}
	for _, e := range []error{errors.New("other"), &pgconn.PgError{Code: "23505"}} {
		if errors.Is(classify(e, false), sink.ErrReadOnly) {
			t.Errorf("classify(%v) is marked read-only", e)
		}
	}
}
