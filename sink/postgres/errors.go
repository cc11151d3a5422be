package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// ErrRowNotFound is wrapped by the error of an update or delete whose row is not
// on the target: the target has diverged from the source.
var ErrRowNotFound = errors.New("row not found on the target (the target has diverged from the source: rows changed there, or the publication changed since the copy — a row filter, or a partition attached or detached under publish_via_partition_root; run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always)")

// ErrNoIdentity is wrapped by the error of an update or delete on a table without
// a replica identity key.
var ErrNoIdentity = errors.New("table has no replica identity")

// ChangeError is the error of one queued operation: what it did, to which table,
// at which source LSN, and what the target said.
type ChangeError struct {
	Op    string // "insert into", "update", "delete from", "truncate", "copy into", …
	Table string // quoted target name, e.g. "public"."t"
	LSN   source.LSN
	// LastLSN is set for COPY runs whose failing row is unknown: the error is
	// somewhere in LSN..LastLSN.
	LastLSN source.LSN
	Key     string // identity of the row for updates and deletes, e.g. (id)=(42)
	// Column is the target column whose value the target refused, when it
	// says (COPY does): unquoted.
	Column string
	Err    error
}

func (e *ChangeError) Error() string {
	var b strings.Builder
	b.WriteString("sink/postgres: ")
	b.WriteString(e.Op)
	if e.Table != "" {
		b.WriteByte(' ')
		b.WriteString(e.Table)
	}
	if e.Key != "" {
		b.WriteString(" key ")
		b.WriteString(e.Key)
	}
	if e.LSN != 0 || e.LastLSN != 0 {
		fmt.Fprintf(&b, " at source LSN %s", e.LSN)
		if e.LastLSN != 0 && e.LastLSN != e.LSN {
			fmt.Fprintf(&b, "..%s", e.LastLSN)
		}
	}
	if e.Column != "" {
		b.WriteString(" column ")
		b.WriteString(pgquote.Ident(e.Column))
	}
	b.WriteString(": ")
	b.WriteString(describe(e.Err))
	if code := sqlState(e.Err); e.Column != "" && (code == "42P01" || code == "42704" || code == "42883" || code == "3F000" || code == "42P05") {
		// An input function that looks an object up by name: an OID alias
		// type's (regclass, regtype, regproc, …).
		b.WriteString("; the column's values name objects (its type is one of the OID alias types, regclass, regtype, regproc, …) and the target lacks this one: create it on the target, or store the names as text")
	}
	return b.String()
}

func (e *ChangeError) Unwrap() error { return e.Err }

// describe renders a server error as PostgreSQL words it, without the
// severity, followed by its DETAIL on the same line: for constraint errors
// the detail names the row ("Key (id)=(42) already exists.", "Failing row
// contains (…)."), which matters most when one statement applied many rows.
func describe(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		s := pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
		if d := strings.Join(strings.Fields(pgErr.Detail), " "); d != "" {
			s += ": " + d
		}
		return s
	}
	return err.Error()
}

// retryableCodes are the SQLSTATEs after which a whole target transaction can be
// retried: nothing of it was committed and a new attempt can succeed.
var retryableCodes = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
	"58030": true, // io_error
}

// isRetryable reports whether the target transaction that failed with err can be
// retried as a whole. lost tells whether the connection is gone: a transaction
// cut off before COMMIT was sent is rolled back by the server, so it may be
// retried too.
func isRetryable(err error, lost bool) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A label added to an enum on the source reaches the target with the
		// next Relation message of a table using the type, which a new session
		// sends: retrying from the stored position adds the label first.
		if pgErr.Code == "22P02" && strings.HasPrefix(pgErr.Message, "invalid input value for enum") {
			return true
		}
		// Likewise an attribute added to a composite type: its rows do not
		// fit the target's type until the next Relation message.
		if pgErr.Code == "22P02" && strings.HasPrefix(pgErr.Message, "malformed record literal") {
			return true
		}
		return retryableCodes[pgErr.Code] || strings.HasPrefix(pgErr.Code, "08")
	}
	return lost || pgconn.SafeToRetry(err)
}

// classify wraps err with sink.Retryable when the transaction may be retried
// (a read-only target's refusal too, as a *ReadOnlyError), and the target's
// refusal of a change's value with sink.ValueRejected.
func classify(err error, lost bool) error {
	if err == nil {
		return nil
	}
	if readOnlyRefusal(err) {
		return sink.Retryable(&ReadOnlyError{Err: err})
	}
	if isRetryable(err, lost) {
		return sink.Retryable(err)
	}
	if valueRejected(err) {
		return sink.ValueRejected(err)
	}
	return err
}

// valueRejected reports whether err is a change's value refused by the target:
// a data exception (class 22: input syntax, out of range, malformed record)
// or a check violation (23514: pgrelay creates no table CHECKs, so a domain's).
func valueRejected(err error) bool {
	var ce *ChangeError
	if !errors.As(err, &ce) {
		return false
	}
	code := sqlState(err)
	return strings.HasPrefix(code, "22") || code == "23514"
}

// sqlState returns the SQLSTATE of a server error, "" for others.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
